/**
 * Reads of a backend that may hang rather than refuse (a broker stopped with SIGSTOP, a database
 * behind a dropped route), for answers that must not wait on it: /readyz's probes and /metrics'
 * gauges. Each key has at most one read running, which every caller that comes meanwhile shares,
 * so reads of a hanging backend never pile up; and each caller waits at most its deadline.
 */

/** `read(key)` with one read running per key, shared by the callers that come while it runs. */
export const sharedReads = <K, T>(read: (key: K) => Promise<T>): ((key: K) => Promise<T>) => {
  const running = new Map<K, Promise<T>>();
  return (key) => {
    const shared = running.get(key);
    if (shared) return shared;
    const started = Promise.resolve()
      .then(() => read(key))
      .finally(() => running.delete(key));
    running.set(key, started);
    return started;
  };
};

/** `answer`, or `late()` once `deadlineMs` passed without it. */
export const withinDeadline = <T>(answer: Promise<T>, deadlineMs: number, late: () => T): Promise<T> =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(() => resolve(late()), deadlineMs);
    timer.unref();
    answer.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
