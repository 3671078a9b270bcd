/**
 * The unfinished calls, followed from the event store's global feed: a call is open from
 * CallSubmitted until CallCompleted or CallFailed. After a restart or a rebalance the processor
 * resumes the open calls it owns and re-arms their deadlines from here, so a deadline survives
 * any restart.
 */
import type { EventStore, RecordedEvent, Subscription, SubscriptionStatus } from '../../shared/ports/event-store.ts';

export interface OpenCall {
  callId: string;
  /** The call's team (whose turn its work takes in the processor's fair queues). */
  teamId: string;
  submittedAt: string;
  /** Recorded deadline, once processing started. */
  deadline?: string;
}

const CALL_STREAM = /^call-(.+)$/;

export class OpenCalls {
  private readonly open = new Map<string, OpenCall>();
  private subscription?: Subscription;

  constructor(private readonly onChange: (call: OpenCall, change: 'opened' | 'closed' | 'updated') => void = () => {}) {}

  /** Follows the feed; resolves once every existing call event is applied. */
  async start(store: EventStore): Promise<void> {
    this.subscription = store.subscribeToAll({
      batchSize: 5000,
      handler: async (events) => {
        for (const event of events) this.apply(event);
      },
    });
    await this.subscription.caughtUp();
  }

  async stop(): Promise<void> {
    await this.subscription?.stop();
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

  private apply(event: RecordedEvent): void {
    const callId = CALL_STREAM.exec(event.streamId)?.[1];
    if (!callId) return;
    switch (event.type) {
      case 'CallSubmitted': {
        const { submittedAt, teamId } = event.data as { submittedAt?: unknown; teamId?: unknown };
        // A malformed event (no submission time) cannot be worked or timed: the projections stop on it and report it.
        if (typeof submittedAt !== 'string' || Number.isNaN(Date.parse(submittedAt))) return;
        const call = { callId, teamId: typeof teamId === 'string' ? teamId : '', submittedAt };
        this.open.set(callId, call);
        this.onChange(call, 'opened');
        return;
      }
      case 'ProcessingStarted': {
        const call = this.open.get(callId);
        const deadline = (event.data as { deadline?: unknown }).deadline;
        if (!call || typeof deadline !== 'string' || Number.isNaN(Date.parse(deadline))) return;
        call.deadline = deadline;
        this.onChange(call, 'updated');
        return;
      }
      case 'CallCompleted':
      case 'CallFailed': {
        const call = this.open.get(callId);
        if (!call) return;
        this.open.delete(callId);
        this.onChange(call, 'closed');
        return;
      }
    }
  }
}
