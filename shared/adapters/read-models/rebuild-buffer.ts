import type { RecordedEvent } from '../../ports/event-store.ts';
import { CheckpointMismatchError } from '../../ports/read-models.ts';
import { changesOf, eventsByCall, foldInto, type LoadedRow, type PendingRow, type RowChange, startsWithSubmission } from './history-rows.ts';

export interface RebuildIo<L extends LoadedRow> {
  /** Stored rows of these calls (those that exist). */
  load(callIds: string[]): Promise<Map<string, L>>;
  /** Writes the changes and the checkpoint in one transaction. */
  flush(changes: RowChange<L>[], checkpoint: bigint): Promise<void>;
}

export interface RebuildLimits {
  /** Flush after this many events; default 50,000. */
  events: number;
  /** Flush once this many bytes (rows and transcripts, roughly) are held; default 64 MB. */
  bytes: number;
}

const DEFAULT_REBUILD_LIMITS: RebuildLimits = { events: 50_000, bytes: 64 * 1024 * 1024 };

/**
 * The write side of a rebuild: folds batches in memory and writes the rows they touched, with the
 * checkpoint, in one transaction per `limits` worth of events. A call's events within that window
 * cost one row write instead of one per event, which is what makes a replay fast. Nothing reads a
 * version being built, and an interrupted rebuild is started over (beginRebuild drops it), so
 * holding rows in memory between flushes loses nothing; `activate` flushes first.
 */
export class RebuildBuffer<L extends LoadedRow> {
  private readonly pending = new Map<string, PendingRow<L>>();
  private events = 0;
  private bytes = 0;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly io: RebuildIo<L>,
    private applied: bigint,
    /** True when a call whose batch starts with its CallSubmitted may skip the load (an upsert guarded by position). */
    private readonly skipLoadOnSubmission: boolean,
    private readonly limits: RebuildLimits = DEFAULT_REBUILD_LIMITS,
  ) {}

  /** The checkpoint of everything applied so far (written or about to be). */
  get checkpoint(): bigint {
    return this.applied;
  }

  apply(events: readonly RecordedEvent[], checkpoint: bigint, expectedCheckpoint: bigint | undefined): Promise<void> {
    return this.serial(async () => {
      if (expectedCheckpoint !== undefined && expectedCheckpoint !== this.applied) throw new CheckpointMismatchError(expectedCheckpoint, this.applied);
      const byCall = eventsByCall(events);
      const toLoad = [...byCall]
        .filter(([callId, list]) => !this.pending.has(callId) && !(this.skipLoadOnSubmission && startsWithSubmission(list)))
        .map(([callId]) => callId);
      const loaded = toLoad.length > 0 ? await this.io.load(toLoad) : new Map<string, L>();
      const known = this.pending.size;
      foldInto(this.pending, byCall, loaded);
      this.bytes += (this.pending.size - known) * 2048;
      for (const event of events) if (event.type === 'TranscriptRecorded') this.bytes += 2 * String((event.data as { text?: unknown }).text ?? '').length;
      this.events += events.length;
      if (checkpoint > this.applied) this.applied = checkpoint;
      if (this.events >= this.limits.events || this.bytes >= this.limits.bytes) await this.write();
    });
  }

  /** Writes what is held. */
  flush(): Promise<void> {
    return this.serial(() => this.write());
  }

  private async write(): Promise<void> {
    await this.io.flush(changesOf(this.pending), this.applied);
    this.pending.clear();
    this.events = 0;
    this.bytes = 0;
  }

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work, work);
    this.queue = run.catch(() => undefined);
    return run;
  }
}
