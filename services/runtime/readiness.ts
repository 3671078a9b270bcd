/**
 * The answer of GET /readyz, the same on every process: the backends answer (probed, each within
 * its deadline: backend-probes.ts) and every registered part is ready. A change from ready to not
 * ready, or of its reasons, is logged once at error level, so the log says why a load balancer
 * took the process out.
 */
import { type Static, Type } from '@sinclair/typebox';
import type { Logger } from 'pino';
import { AnyKeyRecord } from '../../shared/domain/any-key-record.ts';
import type { BackendProbes } from './backend-probes.ts';
import type { Health } from './health.ts';

/** GET /readyz's body, 200 and 503 alike; the OpenAPI document declares it with this schema. */
export const ReadinessReportSchema = Type.Object({
  status: Type.Union([Type.Literal('ready'), Type.Literal('unavailable')]),
  backends: AnyKeyRecord(Type.Boolean(), { description: 'Each backend, and whether it answers.' }),
  components: AnyKeyRecord(
    // A part's own details (its lag, what it retries since when) ride along.
    Type.Object(
      {
        ready: Type.Boolean(),
        reason: Type.Optional(Type.String({ description: 'Why it is not ready (or a note).' })),
      },
      { additionalProperties: true },
    ),
    { description: 'Each part of this process (consumer, projections, subscriptions) and whether it does its job.' },
  ),
  reasons: Type.Optional(
    Type.Array(Type.String(), { description: 'Why not ready: one line per failing backend or part.' }),
  ),
});

export type ReadinessReport = Static<typeof ReadinessReportSchema>;

export const readiness = (check: () => Promise<BackendProbes>, health: Health | undefined, logger: Logger) => {
  let lastReasons = '';
  return async (): Promise<ReadinessReport> => {
    const probed = await check();
    const backends = Object.fromEntries(Object.entries(probed).map(([name, probe]) => [name, probe.up]));
    const own = health?.report() ?? { ready: true, components: {} };
    const reasons = [
      ...Object.entries(probed).flatMap(([name, probe]) => (probe.up ? [] : [`${name} ${probe.reason}`])),
      ...Object.entries(own.components)
        .filter(([, c]) => !c.ready)
        .map(([name, c]) => `${name}: ${c.reason ?? 'not ready'}`),
    ];
    const key = reasons.join('\n');
    if (key !== lastReasons) {
      if (reasons.length > 0) logger.error({ reasons }, `not ready: ${reasons.join('; ')}`);
      else logger.info('ready again');
      lastReasons = key;
    }
    return {
      status: reasons.length === 0 ? 'ready' : 'unavailable',
      backends,
      components: own.components,
      ...(reasons.length > 0 ? { reasons } : {}),
    };
  };
};
