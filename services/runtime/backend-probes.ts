/**
 * The backends' probes behind GET /readyz. Each probe has a deadline: a backend that has not
 * answered within it counts as not ready, and the reason says so. A backend that hangs rather than
 * refuses (a broker stopped with SIGSTOP, whose admin request waits out kafkajs's 10 s request
 * timeout; a database behind a dropped route) would otherwise hold every /readyz for as long, and a
 * load balancer's check gives up first and learns nothing. A backend also has at most one probe
 * running: every /readyz that arrives meanwhile waits on that one (with its own deadline) instead of
 * starting another, so probes of a hanging backend never pile up however often /readyz is asked.
 */

import { sharedReads, withinDeadline } from '../../shared/bounded-reads.ts';

/** How long a probe may take before its backend counts as not answering. */
export const READINESS_PROBE_DEADLINE_MS = 2000;

/** How one backend answered its probe. */
export type BackendProbe = { up: true } | { up: false; reason: string };

/** The probes' answers, by backend. */
export type BackendProbes = Record<string, BackendProbe>;

const seconds = (ms: number) => `${ms / 1000} s`;

/**
 * Runs `probes` (each resolves when its backend answers) for every call, each bounded by
 * `deadlineMs`, sharing a probe still running with the calls that come while it runs.
 */
export const backendProbes = <Name extends string>(
  probes: Record<Name, () => Promise<unknown>>,
  { deadlineMs = READINESS_PROBE_DEADLINE_MS }: { deadlineMs?: number } = {},
): (() => Promise<Record<Name, BackendProbe>>) => {
  const probe = sharedReads((name: Name): Promise<BackendProbe> =>
    Promise.resolve()
      .then(() => probes[name]())
      .then(
        (): BackendProbe => ({ up: true }),
        (): BackendProbe => ({ up: false, reason: 'does not answer' }),
      ),
  );
  const bounded = (answer: Promise<BackendProbe>): Promise<BackendProbe> =>
    withinDeadline(answer, deadlineMs, () => ({ up: false, reason: `did not answer within ${seconds(deadlineMs)}` }));
  const names = Object.keys(probes) as Name[];
  return async () => {
    const answers = await Promise.all(names.map((name) => bounded(probe(name))));
    return Object.fromEntries(names.map((name, i) => [name, answers[i]!])) as Record<Name, BackendProbe>;
  };
};
