/**
 * The unfinished calls, followed from the event store's global feed: a call is open from
 * CallSubmitted until CallCompleted or CallFailed. After a restart or a rebalance the processor
 * resumes the open calls it owns and re-arms their deadlines from here, so a deadline survives
 * any restart. An operator's CallRetried opens a failed call again (`reopened`). It reads the
 * store underneath the sealing and decodes without the personal fields (`decodeWithoutPersonal`).
 */
import type { EventStore, Json, RecordedEvent, SubscriptionStatus } from '../../shared/ports/event-store.ts';
import { callEvents, decodeWithoutPersonal } from '../../shared/domain/call/call-catalogue.ts';
import type { CallEvent } from '../../shared/domain/call/call-events.ts';
import { EventDecodeError } from '../../shared/domain/event-catalogue.ts';
import { type Refollowed, refollowed } from '../runtime/refollowed.ts';

export interface OpenCall {
  callId: string;
  /** The call's team (whose turn its work takes in the processor's fair queues). */
  teamId: string;
  /** When its processing clock started: the submission, or the last retry (CallRetried). */
  submittedAt: string;
  /** Recorded deadline, once processing started. */
  deadline?: string;
}

/**
 * The call events that move the open set; the others (the steps' results) are not decoded at all,
 * which spares the tracker most of each call's bytes. A call event keeps its type across schema
 * versions (upcasters change the data, never the type), so the stored type is the decoded one.
 */
const MOVES_THE_OPEN_SET: ReadonlySet<string> = new Set<CallEvent['type']>([
  'CallSubmitted',
  'ProcessingStarted',
  'CallRetried',
  'CallCompleted',
  'CallFailed',
  'CallErased',
]);

/** Name of the open set's snapshot in the event store. */
export const OPEN_CALLS_SNAPSHOT = 'open-calls';
/** How often the open set is snapshotted when it moved on; default 30 s (and at stop). */
export const DEFAULT_SNAPSHOT_EVERY_MS = 30_000;

/** The calls of a stored snapshot; undefined when it is not one this code wrote. */
const decodeSnapshot = (data: Json): OpenCall[] | undefined => {
  const calls = (data as { calls?: unknown } | null)?.calls;
  if (!Array.isArray(calls)) return undefined;
  const valid = calls.every(
    (c: Partial<OpenCall> | null) =>
      typeof c?.callId === 'string' &&
      typeof c.teamId === 'string' &&
      typeof c.submittedAt === 'string' &&
      (c.deadline === undefined || typeof c.deadline === 'string'),
  );
  return valid ? (calls as OpenCall[]) : undefined;
};

export class OpenCalls {
  private readonly open = new Map<string, OpenCall>();
  private subscription?: Refollowed;
  /** Position of the last event applied; what a snapshot covers. */
  private position = 0n;
  private snapshotted = 0n;
  private snapshotTimer?: NodeJS.Timeout;
  private store?: EventStore;
  /** Whether an event it folds did not decode: then no snapshot is stored past it (see `snapshot`). */
  private metUndecodable = false;

  constructor(
    private readonly onChange: (
      call: OpenCall,
      change: 'opened' | 'reopened' | 'closed' | 'updated' | 'erased',
    ) => void = () => {},
    private readonly options: {
      snapshotEveryMs?: number;
      /** Told of a call event of a type it folds that does not decode (it is not folded). */
      onUndecodable?: (error: EventDecodeError) => void;
      /** Told when the feed failed; it is followed again in `retryInMs`. */
      onFailed?: (error: unknown, retryInMs: number) => void;
    } = {},
  ) {}

  /**
   * Starts from the last snapshot of the open set (so a start reads only the events after it, not
   * the whole history) and follows the feed; resolves once every existing call event is applied.
   */
  async start(store: EventStore): Promise<void> {
    this.store = store;
    // An unreadable snapshot only costs time: the feed from the start gives the same set.
    const snapshot = await store.readSnapshot(OPEN_CALLS_SNAPSHOT).catch(() => undefined);
    const calls = snapshot ? decodeSnapshot(snapshot.data) : undefined;
    if (snapshot && calls) {
      for (const call of calls) {
        this.open.set(call.callId, { ...call });
        this.onChange(call, 'opened');
      }
      this.position = this.snapshotted = snapshot.position;
    }
    this.follow(store);
    await this.subscription!.caughtUp();
    this.snapshotTimer = setInterval(
      () => void this.snapshot(),
      this.options.snapshotEveryMs ?? DEFAULT_SNAPSHOT_EVERY_MS,
    );
    this.snapshotTimer.unref();
  }

  /**
   * Follows the feed from the last applied event; a subscription that fails is followed again
   * (`refollowed`), so the deadlines and the intake's resumption, which wait for this feed, never
   * stay without it.
   */
  private follow(store: EventStore): void {
    this.subscription = refollowed(
      () =>
        store.subscribeToAll({
          categories: [callEvents.category],
          batchSize: 5000,
          after: this.position,
          handler: async (events) => {
            for (const event of events) this.apply(event);
            this.position = events[events.length - 1]!.position;
          },
        }),
      { onFailed: this.options.onFailed },
    );
  }

  async stop(): Promise<void> {
    clearInterval(this.snapshotTimer);
    await this.subscription?.stop();
    await this.snapshot();
  }

  /** Stores the open set as of the last applied event, when it moved on since the last snapshot. */
  async snapshot(): Promise<void> {
    const position = this.position;
    if (!this.store || position <= this.snapshotted) return;
    // A call whose CallSubmitted (or closing event) did not decode is missing from (or wrongly in)
    // the set: a snapshot past it would keep it so for good, and once a fixed version decodes the
    // event a start from that snapshot would never read it again (the call would have no deadline).
    // The last snapshot stays, so a start folds the feed after it.
    if (this.metUndecodable) return;
    const calls: Json[] = [...this.open.values()].map(({ callId, teamId, submittedAt, deadline }) => ({
      callId,
      teamId,
      submittedAt,
      ...(deadline ? { deadline } : {}),
    }));
    try {
      await this.store.storeSnapshot(OPEN_CALLS_SNAPSHOT, { position, data: { calls } });
      this.snapshotted = position;
    } catch {
      // The next one will try again; meanwhile a start reads a little more of the feed.
    }
  }

  /** Resolves once every event appended before the call is applied. */
  async caughtUp(): Promise<void> {
    await this.subscription?.caughtUp();
  }

  /** The feed subscription's state (deadlines and resumption depend on it). */
  status(): SubscriptionStatus {
    return this.subscription?.status() ?? { state: 'stopped', since: new Date(), error: 'not started' };
  }

  all(): OpenCall[] {
    return [...this.open.values()];
  }

  get(callId: string): OpenCall | undefined {
    return this.open.get(callId);
  }

  private apply(stored: RecordedEvent): void {
    if (!MOVES_THE_OPEN_SET.has(stored.type)) return;
    const callId = callEvents.idOf(stored.streamId);
    if (callId === undefined) return;
    let event;
    try {
      event = decodeWithoutPersonal(stored);
    } catch (error) {
      // Never folded; the call history projection stops on the same event and reports it, and the
      // other calls go on (docs/decisions/0016-event-catalogues-and-upcasting.md).
      if (!(error instanceof EventDecodeError)) throw error;
      this.metUndecodable = true;
      this.options.onUndecodable?.(error);
      return;
    }
    switch (event.type) {
      case 'CallSubmitted': {
        const call = { callId, teamId: event.data.teamId, submittedAt: event.data.submittedAt };
        this.open.set(callId, call);
        this.onChange(call, 'opened');
        return;
      }
      case 'ProcessingStarted': {
        const call = this.open.get(callId);
        if (!call) return;
        call.deadline = event.data.deadline;
        this.onChange(call, 'updated');
        return;
      }
      case 'CallRetried': {
        // The deadline runs from the retry; the team is in the metadata of every call event.
        const { teamId } = event.metadata;
        if (this.open.has(callId)) return;
        const call = { callId, teamId: typeof teamId === 'string' ? teamId : '', submittedAt: event.data.at };
        this.open.set(callId, call);
        this.onChange(call, 'reopened');
        return;
      }
      case 'CallCompleted':
      case 'CallFailed':
      case 'CallErased': {
        const call = this.open.get(callId);
        if (!call) return;
        this.open.delete(callId);
        this.onChange(call, event.type === 'CallErased' ? 'erased' : 'closed');
        return;
      }
      default:
        return;
    }
  }
}

/**
 * The processor's sweep wakes an open call no actor works only when it was open and unworked at
 * the sweep before as well. This tracker follows the feed, so a call whose actor has just closed
 * it looks open until the closing event reaches it: seen once, such a call is only noted, and a
 * call nobody works is woken one sweep later.
 */
export class UnworkedCalls {
  private before = new Set<string>();

  /** Of the calls open and unworked now, those that were so at the previous call too. */
  confirm(unworked: Iterable<string>): Set<string> {
    const now = new Set(unworked);
    const confirmed = new Set([...now].filter((callId) => this.before.has(callId)));
    this.before = now;
    return confirmed;
  }
}
