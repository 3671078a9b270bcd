/**
 * Hand-resolved promises and a settle helper for deterministic unit tests: a test decides when a
 * fake backend answers instead of waiting for it.
 */
export interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

export const deferred = <T = void>(): Deferred<T> => {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
};

/** The real setImmediate, taken before any test mocks the timers. */
const nextTurn = setImmediate;

/**
 * Lets every promise chain that can move on do so: resolves after the microtask queue is empty
 * (`turns` macrotask turns). Not a sleep: nothing waits for time to pass, and it works the same
 * under node:test mock timers.
 */
export const settled = (turns = 1): Promise<void> =>
  turns <= 0 ? Promise.resolve() : new Promise<void>((resolve) => nextTurn(resolve)).then(() => settled(turns - 1));
