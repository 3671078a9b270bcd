/**
 * Retries with jittered exponential backoff ("full jitter"): retriable errors wait
 * random(0, min(maxDelay, base × 2^attempt)) and try again, up to `maxAttempts`; a terminal error,
 * or the last attempt's error, is thrown.
 */
import { isDomainError } from '../../shared/domain/decider.ts';

export interface RetryPolicy {
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 8, baseDelayMs: 500, maxDelayMs: 60_000 };

/**
 * StepError.retriable, EventStoreUnavailableError.retriable, …; unknown errors count as retriable.
 * A DomainError does not: the domain refused the command on the state it was decided on (a
 * repository reads the stream again before a refusal of a cached state stands), and deciding it
 * again on that state refuses it again. A refusal that means the step lost a race is no error to
 * the pipeline (see `lostRace` in call-pipeline.ts).
 */
export const isRetriable = (error: unknown): boolean =>
  !isDomainError(error) && (error as { retriable?: boolean })?.retriable !== false;

export const backoffDelay = (policy: RetryPolicy, attempt: number, random: () => number = Math.random): number =>
  Math.floor(random() * Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1)));

/** Waits `ms`; rejects with the signal's reason when it aborts first. */
export const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(done, ms);
    function done() {
      signal.removeEventListener('abort', abort);
      resolve();
    }
    function abort() {
      clearTimeout(timer);
      reject(signal.reason);
    }
    signal.addEventListener('abort', abort, { once: true });
  });

export const retrying = async <T>(
  work: () => Promise<T>,
  policy: RetryPolicy,
  signal: AbortSignal,
  onRetry?: (error: unknown, attempt: number, delayMs: number) => void,
  /** How the backoff waits; an actor gives its processing slot back meanwhile (see actors.ts). */
  pause: (ms: number, signal: AbortSignal) => Promise<void> = sleep,
  /** The jitter's random source, in [0, 1); injectable so a test knows every delay. */
  random: () => number = Math.random,
): Promise<T> => {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (signal.aborted || !isRetriable(error) || attempt >= policy.maxAttempts) throw error;
      const delayMs = backoffDelay(policy, attempt, random);
      onRetry?.(error, attempt, delayMs);
      await pause(delayMs, signal);
    }
  }
};
