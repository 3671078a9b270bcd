/**
 * Keeps a kafkajs group member alive while one of its batch handlers is open. kafkajs has no
 * background heartbeat: between fetches it sends one only when a batch handler calls
 * `heartbeat()`, so a handler that waits — for the dispatcher to take a record during an outage,
 * for the revoke / assign callbacks, for its records to finish — goes silent, and the broker drops
 * the member after the session timeout.
 *
 * Asking every interval costs no extra requests: kafkajs sends a heartbeat only when the last
 * successful one is at least `heartbeatInterval` old, and callers share the one in flight.
 */

export interface BatchHeartbeat {
  /** The first heartbeat error (usually a rebalance), if any; heartbeats went on after it. */
  readonly interrupted: { error: unknown } | undefined;
  /** Stops the timer; no heartbeat is asked for after this returns. */
  stop(): void;
}

/** Calls `heartbeat` every `intervalMs` until `stop()`. */
export const keepHeartbeating = (heartbeat: () => Promise<void>, intervalMs: number): BatchHeartbeat => {
  let interrupted: { error: unknown } | undefined;
  let inFlight = false;
  const timer = setInterval(() => {
    if (inFlight) return;
    inFlight = true;
    // An error does not stop the beating. In a rebalance the member finishes its records before it
    // rejoins (up to the rebalance timeout); the broker still counts a heartbeat it answers with
    // REBALANCE_IN_PROGRESS, and without them drops the member after the session timeout.
    void heartbeat()
      .catch((error: unknown) => (interrupted ??= { error }))
      .finally(() => (inFlight = false));
  }, intervalMs);
  return {
    get interrupted() {
      return interrupted;
    },
    stop: () => clearInterval(timer),
  };
};
