/**
 * A LISTEN session that re-establishes itself. PostgreSQL delivers NOTIFY only to a connected
 * session, so when the connection drops (a restart, a failover, pg_terminate_backend, an idle
 * timeout of a pooler) the session is opened again with jittered exponential backoff and LISTENs
 * again. Notifications sent while it was away are lost: on every (re)connection `onNotification`
 * is called once, so whoever relies on it re-reads what it may have missed. Meanwhile the caller
 * keeps its own polling; this only makes wake-ups faster.
 */
import type pg from 'pg';

export type ListenerState =
  /** The session was lost (or could not be opened); reported once per outage, with the error. */
  | { state: 'lost'; error: unknown; retryInMs: number }
  /** LISTEN has held again for `stableAfterMs` after an outage; `downMs` counts from the loss. */
  | { state: 'restored'; downMs: number };

export interface PostgresListenerOptions {
  /** A new, unconnected client (createPostgresClient). */
  connect: () => pg.Client;
  /** The channel to LISTEN on (an identifier). */
  channel: string;
  /** Called with each notification's payload, and with undefined after each (re)connection. */
  onNotification: (payload: string | undefined) => void;
  /** Called once when the session is lost and once when it is back. Exceptions are ignored. */
  onStateChange?: (change: ListenerState) => void;
  /** Backoff between attempts: from `minDelayMs` (default 100) doubling to `maxDelayMs` (default 5000), jittered. */
  minDelayMs?: number;
  maxDelayMs?: number;
  /**
   * How long LISTEN must hold before the outage counts as over (default 1000 ms): a connection
   * that flaps (dropped again and again) is one outage, reported once, not a pair of lines per drop.
   */
  stableAfterMs?: number;
}

export interface PostgresListener {
  /** Opens the session in the background (idempotent). */
  start(): void;
  /** Whether LISTEN currently holds. */
  readonly listening: boolean;
  /** Closes the session and stops reconnecting. */
  stop(): Promise<void>;
}

export const createPostgresListener = (options: PostgresListenerOptions): PostgresListener => {
  const minDelayMs = options.minDelayMs ?? 100;
  const maxDelayMs = options.maxDelayMs ?? 5000;
  const stableAfterMs = options.stableAfterMs ?? 1000;
  let started = false;
  let stopped = false;
  let client: pg.Client | undefined;
  let listening = false;
  let failures = 0;
  let lostAt: number | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stableTimer: NodeJS.Timeout | undefined;
  let attempt: Promise<void> | undefined;

  const report = (change: ListenerState) => {
    try {
      options.onStateChange?.(change);
    } catch {
      // reporting must not break the listener
    }
  };

  const retryLater = (error: unknown) => {
    if (stopped) return;
    failures++;
    const ceiling = Math.min(maxDelayMs, minDelayMs * 2 ** Math.min(failures - 1, 16));
    const retryInMs = Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
    if (lostAt === undefined) {
      lostAt = Date.now();
      report({ state: 'lost', error, retryInMs });
    }
    clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      attempt = open();
    }, retryInMs);
  };

  /** The session `session` ended or failed: drop it and try again later (once per session). */
  const lose = (session: pg.Client, error: unknown) => {
    if (session !== client) return;
    client = undefined;
    listening = false;
    clearTimeout(stableTimer);
    session.end().catch(() => undefined);
    retryLater(error);
  };

  const open = async (): Promise<void> => {
    if (stopped) return;
    const session = options.connect();
    client = session;
    // Registered before connecting: an 'error' without a listener would end the process.
    session.on('error', (error) => lose(session, error));
    session.on('end', () => lose(session, new Error('the LISTEN connection ended')));
    session.on('notification', (message) => {
      if (message.channel === options.channel) options.onNotification(message.payload);
    });
    try {
      await session.connect();
      await session.query(`LISTEN ${options.channel}`);
    } catch (error) {
      lose(session, error);
      return;
    }
    if (session !== client || stopped) return;
    listening = true;
    if (lostAt !== undefined) {
      const since = lostAt;
      stableTimer = setTimeout(() => {
        if (session !== client || stopped) return;
        failures = 0;
        lostAt = undefined;
        report({ state: 'restored', downMs: Date.now() - since });
      }, stableAfterMs);
    } else {
      failures = 0;
    }
    options.onNotification(undefined);
  };

  return {
    start() {
      if (started || stopped) return;
      started = true;
      attempt = open();
    },
    get listening() {
      return listening;
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      clearTimeout(stableTimer);
      await attempt;
      const session = client;
      client = undefined;
      listening = false;
      await session?.end().catch(() => undefined);
    },
  };
};
