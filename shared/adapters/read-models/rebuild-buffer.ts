import { erasedCallIds, type RecordedCallEvent } from '../../domain/call/call-history.ts';
import type { RecordedEvent } from '../../ports/event-store.ts';
import { CheckpointMismatchError } from '../../ports/read-models.ts';
import {
  eventsByCall,
  foldInto,
  jsonBytes,
  type LoadedRow,
  type PendingRow,
  rowBytesAfter,
  type RowChange,
  startsWithSubmission,
} from './history-rows.ts';

export interface RebuildIo<L extends LoadedRow> {
  /** Stored rows of these calls (those that exist). */
  load(callIds: string[]): Promise<Map<string, L>>;
  /**
   * Starts writing the changes and the checkpoint in one transaction. Returns at once, with the
   * write and `stored(i)`: the row of `changes[i]` as `load` will return it once written. The rows
   * of `erased` calls are deleted in the same transaction, after the changes.
   */
  flush(
    changes: RowChange<L>[],
    checkpoint: bigint,
    erased: string[],
  ): { stored: (index: number) => L; written: Promise<void> };
}

export interface RebuildLimits {
  /** Flush after this many events; default 50,000. */
  events: number;
  /** Flush once the rows held come to this many bytes (counted as their JSON, transcripts included); default 64 MB. */
  bytes: number;
}

const DEFAULT_REBUILD_LIMITS: RebuildLimits = { events: 50_000, bytes: 64 * 1024 * 1024 };

/** What a row held costs beyond its JSON (its objects, its entry in the map). */
const ROW_OVERHEAD_BYTES = 1024;

/**
 * Counts `entry` as holding its row's JSON (see jsonBytes), which is about what its write makes,
 * and at least what the row's own strings take in memory. A row counted before is counted from
 * that count and the fields folding changed since (rowBytesAfter), not walked again: each event
 * would otherwise walk its whole row.
 */
const count = (entry: PendingRow<LoadedRow>): number => {
  const { current, counted, bytes } = entry;
  entry.bytes =
    ROW_OVERHEAD_BYTES +
    (current === undefined
      ? 0
      : counted !== undefined && bytes !== undefined
        ? rowBytesAfter(counted, bytes - ROW_OVERHEAD_BYTES, current)
        : jsonBytes(current));
  entry.counted = current;
  return entry.bytes;
};

/**
 * The write side of a rebuild: folds batches in memory and writes the rows they touched, with the
 * checkpoint, in one transaction per `limits` worth of events. A call's events within that window
 * cost one row write instead of one per event, which is what makes a replay fast. Nothing reads a
 * version being built, and an interrupted rebuild is started over (beginRebuild drops it), so
 * holding rows in memory between flushes loses nothing; `activate` flushes first.
 *
 * Writes overlap folding: a full window is handed to `io.flush` and the next one folds while it is
 * written (one write in flight; the next hand-off waits for it). So that the next window needs no
 * stored row, the rows of calls still pending after a write stay in memory (as `load` would return
 * them, the newest within half of `limits.bytes`), and a call whose batch starts with its
 * CallSubmitted later in the feed than anything written has no stored row yet. Only other calls are
 * loaded, after the write in flight. A failed write fails every later apply, flush and activation.
 */
export class RebuildBuffer<L extends LoadedRow> {
  private pending = new Map<string, PendingRow<L>>();
  /** Calls erased since the last hand-off: their stored rows are deleted by the next write. */
  private erased = new Set<string>();
  private events = 0;
  private bytes = 0;
  /** Highest position of an event in a window handed to `io.flush`. */
  private handedOff = 0n;
  /** Highest position of an event folded. */
  private folded = 0n;
  /** The checkpoint of the last window handed to `io.flush` (at first, the one stored with the empty version). */
  private handedCheckpoint: bigint;
  private writing: Promise<void> = Promise.resolve();
  private failure: { error: unknown } | undefined;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly io: RebuildIo<L>,
    private applied: bigint,
    /** True when a call whose batch starts with its CallSubmitted may always skip the load (an upsert guarded by position). */
    private readonly skipLoadOnSubmission: boolean,
    private readonly limits: RebuildLimits = DEFAULT_REBUILD_LIMITS,
  ) {
    this.handedCheckpoint = applied;
  }

  /** The checkpoint of everything applied so far (written or about to be). */
  get checkpoint(): bigint {
    return this.applied;
  }

  apply(events: readonly RecordedEvent[], checkpoint: bigint, expectedCheckpoint: bigint | undefined): Promise<void> {
    return this.serial(async () => {
      this.throwIfFailed();
      if (expectedCheckpoint !== undefined && expectedCheckpoint !== this.applied)
        throw new CheckpointMismatchError(expectedCheckpoint, this.applied);
      const byCall = eventsByCall(events);
      const toLoad: string[] = [];
      for (const [callId, list] of byCall)
        if (!this.pending.has(callId) && !this.hasNoStoredRow(list)) toLoad.push(callId);
      let loaded = new Map<string, L>();
      if (toLoad.length > 0) {
        await this.written();
        loaded = await this.io.load(toLoad);
      }
      // Each row touched is counted again as it now is (the rows of calls at the size limits are ~200 KB of JSON).
      foldInto(this.pending, byCall, loaded, (entry) => {
        const counted = entry.bytes ?? 0;
        this.bytes += count(entry) - counted;
      });
      // An erased call is neither written nor held: its stored row (if any) is deleted at the next write.
      for (const callId of erasedCallIds(events)) {
        this.bytes -= this.pending.get(callId)?.bytes ?? 0;
        this.pending.delete(callId);
        this.erased.add(callId);
      }
      for (const event of events) if (event.position > this.folded) this.folded = event.position;
      this.events += events.length;
      if (checkpoint > this.applied) this.applied = checkpoint;
      if (this.events >= this.limits.events || this.bytes >= this.limits.bytes) await this.handOff();
    });
  }

  /** Writes what is held and waits until it is written. */
  flush(): Promise<void> {
    return this.serial(async () => {
      this.throwIfFailed();
      await this.handOff();
      await this.written();
    });
  }

  /** A call whose batch starts with its CallSubmitted after every event written has no row yet. */
  private hasNoStoredRow(list: readonly RecordedCallEvent[]): boolean {
    return startsWithSubmission(list) && (this.skipLoadOnSubmission || list[0]!.position > this.handedOff);
  }

  /** Hands what is held to a write once the previous one is done; keeps the rows of pending calls. */
  private async handOff(): Promise<void> {
    await this.written();
    const changes: RowChange<L>[] = [];
    /** Per held call: its entry (its stored row, untouched), the index of its change, or nothing. */
    const held: Array<PendingRow<L> | number> = [];
    for (const entry of this.pending.values()) {
      const { before, current } = entry;
      if (current !== undefined && current !== before?.row) {
        held.push(changes.length);
        changes.push({ before, after: current, bytes: entry.bytes ?? count(entry) });
      } else if (before) held.push(entry);
    }
    let stored = (index: number): L => {
      throw new Error(`change ${index} was not written`);
    };
    // Nothing to write (no row changed, the checkpoint is written or on its way): no transaction.
    if (changes.length > 0 || this.erased.size > 0 || this.applied !== this.handedCheckpoint) {
      const flushed = this.io.flush(changes, this.applied, [...this.erased]);
      this.erased = new Set();
      stored = flushed.stored;
      this.writing = flushed.written.catch((error: unknown) => {
        this.failure ??= { error };
      });
      this.handedCheckpoint = this.applied;
    }
    this.handedOff = this.folded;
    // The pending calls' rows as stored, each counted from what its entry or its change counted.
    const kept: PendingRow<L>[] = [];
    for (const slot of held) {
      if (typeof slot !== 'number') {
        const { before, current, counted, bytes } = slot;
        if (before!.row.status === 'pending')
          kept.push(current === before!.row ? slot : { before, current: before!.row, counted, bytes });
      } else {
        const { after, bytes } = changes[slot]!;
        if (after.status !== 'pending') continue;
        const row = stored(slot);
        kept.push({ before: row, current: row.row, counted: after, bytes });
      }
    }
    // The newest pending rows, within half the budget: the next window has the other half.
    const retained: PendingRow<L>[] = [];
    this.bytes = 0;
    for (let i = kept.length - 1; i >= 0; i--) {
      const entry = kept[i]!;
      const bytes = count(entry);
      if (this.bytes + bytes > this.limits.bytes / 2) break;
      this.bytes += bytes;
      retained.push(entry);
    }
    this.pending = new Map(retained.reverse().map((entry) => [entry.current!.callId, entry]));
    this.events = 0;
  }

  private async written(): Promise<void> {
    await this.writing;
    this.throwIfFailed();
  }

  private throwIfFailed(): void {
    if (this.failure) throw this.failure.error;
  }

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work, work);
    this.queue = run.catch(() => undefined);
    return run;
  }
}
