/**
 * The answer of GET /readyz, the same on every process: the backends answer (probed) and every
 * registered part is ready. A change from ready to not ready, or of its reasons, is logged once
 * at error level, so the log says why a load balancer took the process out.
 */
import type { Logger } from 'pino';
import type { ComponentReport, Health } from './health.ts';

export interface ReadinessReport {
  status: 'ready' | 'unavailable';
  backends: Record<string, boolean>;
  components: Record<string, ComponentReport>;
  /** Why not ready: one line per failing backend or part. */
  reasons?: string[];
}

export const readiness = (
  check: () => Promise<Record<string, boolean>>,
  health: Health | undefined,
  logger: Logger,
) => {
  let lastReasons = '';
  return async (): Promise<ReadinessReport> => {
    const backends = await check();
    const own = health?.report() ?? { ready: true, components: {} };
    const reasons = [
      ...Object.entries(backends)
        .filter(([, up]) => !up)
        .map(([name]) => `${name} does not answer`),
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
