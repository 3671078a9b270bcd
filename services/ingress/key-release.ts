/**
 * The release of an Idempotency-Key claim whose request ends without a 201
 * (docs/decisions/0006-idempotency-key.md). A request that ends without a 201 does not hold its
 * key: the release is tried before the answer, and when the store does not take it (it is down:
 * the likely reason the request failed at all), it is tried again in the background, with jittered
 * backoff, until it is stored or the claim's lease ends, after which a retry of the same body takes
 * the key over by itself. Meanwhile the key answers 409 with a Retry-After up to the lease's end,
 * and the failed request's own answer asks the client to wait at least that long.
 */
import type { FastifyBaseLogger } from 'fastify';
import { jitteredBackoff } from '../../shared/adapters/event-log/consumer-status.ts';

export interface KeyReleaseOptions {
  /** Stores the release; whether it released the key (false: another attempt holds it now). */
  release: () => Promise<boolean>;
  /** When the claim's lease ends (ms since the epoch, on `now`'s clock): no retry after it. */
  leaseEndsAt: number;
  now: () => Date;
  log: FastifyBaseLogger;
  /** Aborted when the ingress closes: the retrying stops. */
  signal: AbortSignal;
  /** Pause before retry n (full jitter); default 100 ms doubling to at most 2 s. */
  backoff?: { baseMs: number; maxMs: number };
}

/** What became of a release. */
export type KeyReleaseOutcome =
  /** Stored: the key is free (or bound to its body only, after a publish of unknown outcome). */
  | 'released'
  /** Another attempt of the request holds the key: nothing to release. */
  | 'taken-over'
  /** Not stored yet: retried in the background until the claim's lease ends. */
  | 'pending';

/**
 * Tries the release once and answers how it went; a release that failed goes on in the background
 * (logged once when it starts failing, and once when it is stored or given up).
 */
export const releaseClaim = async (options: KeyReleaseOptions): Promise<KeyReleaseOutcome> => {
  try {
    return (await options.release()) ? 'released' : 'taken-over';
  } catch (error) {
    options.log.error(
      { err: error, leaseEndsAt: new Date(options.leaseEndsAt).toISOString() },
      "idempotency release failed; retrying it in the background until it is stored or the claim's lease ends",
    );
    void retryInBackground(options);
    return 'pending';
  }
};

const retryInBackground = async (options: KeyReleaseOptions): Promise<void> => {
  const { baseMs, maxMs } = options.backoff ?? { baseMs: 100, maxMs: 2000 };
  for (let attempt = 1; ; attempt++) {
    const waitMs = Math.min(jitteredBackoff(attempt, baseMs, maxMs), options.leaseEndsAt - options.now().getTime());
    if (waitMs <= 0 || !(await pause(waitMs, options.signal))) break;
    try {
      const released = await options.release();
      options.log.info({ attempts: attempt + 1, released }, 'idempotency release stored after retrying');
      return;
    } catch {
      // Still failing: the first failure was logged; the next line says how it ended.
    }
  }
  if (options.signal.aborted) return;
  options.log.warn(
    "idempotency release not stored before the claim's lease ended: a retry with the same body takes the key over",
  );
};

/** Waits `ms`; false when `signal` aborts first. */
const pause = (ms: number, signal: AbortSignal): Promise<boolean> =>
  new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const done = (finished: boolean) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', aborted);
      resolve(finished);
    };
    const aborted = () => done(false);
    const timer = setTimeout(() => done(true), ms);
    timer.unref();
    signal.addEventListener('abort', aborted, { once: true });
  });
