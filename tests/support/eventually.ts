/**
 * Retries `check` until it stops throwing or the deadline passes; the last failure is rethrown.
 * Tests poll for outcomes with this instead of sleeping.
 */
export const eventually = async <T>(
  check: () => T | Promise<T>,
  { timeoutMs = 10_000, intervalMs = 10 } = {},
): Promise<T> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  }
};
