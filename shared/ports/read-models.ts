/**
 * Read-model storage port: the call history (list, search, detail) and the deal records with their
 * `deal.outcome.updated` outbox. Both are projections of the event store's global feed.
 *
 * Exactly-once effect over an at-least-once feed: `apply(events, checkpoint)` folds a batch into
 * the rows it touches and stores `checkpoint` in the same transaction. Every row remembers the
 * position of the last event it took, so a batch applied twice (a crash between apply and the
 * caller's bookkeeping, a replay) changes nothing. A runner resumes from `checkpoint()`.
 *
 * Rebuild (replay into a fresh copy): `beginRebuild()` creates a new, empty version of the call
 * history tables; the caller feeds it the whole feed through the returned target while reads, and
 * live applies, keep using the active version. `activate()` then switches reads and live applies to
 * the new version in one transaction and drops the old one. A live runner that passes
 * `expectedCheckpoint` learns of the switch through CheckpointMismatchError and resumes from the
 * new version's checkpoint, so no event between the two checkpoints is skipped.
 */
import type { CallHistoryRow, CallHistoryStatus } from '../domain/call/call-history.ts';
import type { CallListRow } from '../domain/call/call-view.ts';
import type { DealRecord } from '../domain/call/deal-record.ts';
import type { RecordedEvent } from './event-store.ts';
import { unavailableError } from './unavailable.ts';
import type { WebhookStore } from './webhook-store.ts';

export interface ApplyOptions {
  /**
   * The checkpoint the caller believes is stored (the one it last applied or read). When given and
   * the stored one differs (another runner moved it, or a rebuild was activated), nothing is
   * written and CheckpointMismatchError is thrown.
   */
  expectedCheckpoint?: bigint;
}

/** Where a projection's rows are written. */
export interface ProjectionWriter {
  /**
   * Folds `events` (global order, any streams; others are ignored) into the rows they touch and
   * stores `checkpoint`, all in one transaction. Idempotent per event. The stored checkpoint never
   * moves back: a lower one than stored is ignored.
   * @throws CheckpointMismatchError when `options.expectedCheckpoint` does not hold.
   */
  apply(events: readonly RecordedEvent[], checkpoint: bigint, options?: ApplyOptions): Promise<void>;
  /** The checkpoint stored with the rows; 0n before the first apply. */
  checkpoint(): Promise<bigint>;
}

export interface CallHistoryQuery {
  /**
   * Free-text search: an exact, case-insensitive substring of the displayed title or of the rep
   * name (spec, "Call history search"). Trimmed of white space (not of U+FEFF:
   * shared/domain/white-space.ts); blank means no search. `%`, `_` and `\` are literal characters.
   */
  search?: string;
  /**
   * Only calls that have every one of these tags (each trimmed of white space, as the ingest trims
   * a tag, and compared with the search's case folding). A blank tag is refused.
   */
  tags?: string[];
  status?: CallHistoryStatus;
  /** Calls whose callDate is at or after this ISO 8601 date or instant. */
  from?: string;
  /** Calls whose callDate is at or before this ISO 8601 instant; a bare date means through the end of that day (UTC). */
  to?: string;
  /** Calls whose rep e-mail is this address (ASCII letters compared case-insensitively). */
  repEmail?: string;
  /** Calls whose row last changed at or after this ISO 8601 instant (for incremental sync; pair with `order: 'updated_asc'`). */
  updatedSince?: string;
  /** `created_desc` (default): newest first. `updated_asc`: least recently changed first, by (updatedAt, callId). */
  order?: CallHistoryOrder;
  /** 1–100; default 25. */
  limit?: number;
  /** `nextCursor` of the previous page (of the same order). */
  cursor?: string;
}

export const CALL_HISTORY_ORDERS = ['created_desc', 'updated_asc'] as const;
export type CallHistoryOrder = (typeof CALL_HISTORY_ORDERS)[number];

export interface CallHistoryPage {
  /**
   * Newest first: `createdAt` descending, then `callId` descending (or, for `updated_asc`,
   * `updatedAt` ascending, then `callId` ascending). Each row as a list reads it (CallListRow: what
   * the list item shows, and `updatedAt`): the transcript, analysis, deal and submission are not
   * read, so a page of 100 calls with 500 KB transcripts reads no transcript at all.
   */
  calls: CallListRow[];
  /** Cursor of the next page; null on the last one. */
  nextCursor: string | null;
}

export const CALL_HISTORY_LIMITS = { defaultLimit: 25, maxLimit: 100 } as const;

/** A call of `CallHistoryStore.submittedBefore`'s answer; pass the last one as `after` to page on. */
export interface SubmittedCall {
  callId: string;
  /** Its submission instant in milliseconds since the epoch, as the history orders it. */
  submittedAtMs: number;
}

export interface CallHistoryStore extends ProjectionWriter {
  /** The call, or undefined when it does not exist or belongs to another team. */
  get(teamId: string, callId: string): Promise<CallHistoryRow | undefined>;
  /**
   * One page of the team's call history.
   * @throws InvalidQueryError for a limit outside 1–100, an unknown status, a blank tag or a cursor this store did not issue.
   */
  list(teamId: string, query?: CallHistoryQuery): Promise<CallHistoryPage>;
  /** The version reads and live applies use: 1 until a rebuild is activated, then the rebuild's. */
  activeVersion(): Promise<number>;
  /**
   * Up to `limit` of the team's calls submitted before `before` (an ISO 8601 instant), oldest first
   * (by submission, then call id): what a retention period erases. `after`, the last call of the page
   * before, pages on past it (so calls left in the history, which could not be erased, are passed).
   */
  submittedBefore(teamId: string, before: string, limit: number, after?: SubmittedCall): Promise<SubmittedCall[]>;
  /**
   * The team's calls whose rep e-mail or attributed member's e-mail is `email` (ASCII letters
   * compared case-insensitively): what an erasure request by e-mail erases.
   */
  callsOfEmail(teamId: string, email: string): Promise<string[]>;
  /**
   * Creates a new, empty version of the call history tables (dropping any unfinished earlier
   * rebuild) and returns where to write it.
   */
  beginRebuild(): Promise<CallHistoryRebuild>;
}

/**
 * Where a rebuild writes. Unlike a live apply, `apply` here may fold batches in memory and write
 * them (rows and checkpoint together) once per larger window, so a call's events cost one row
 * write: that is what makes a replay fast. `checkpoint()` is the position of everything applied;
 * `activate()` writes what is held first. A rebuild is not resumed after a crash: the next
 * `beginRebuild` drops it and starts over. Feed it from one runner at a time.
 */
export interface CallHistoryRebuild extends ProjectionWriter {
  /** The version being built (the active one is lower). */
  readonly version: number;
  /**
   * Makes this version the one reads and live applies use, atomically, and drops the previous one.
   * Feed the rebuild up to (or near) the head of the feed first.
   */
  activate(): Promise<void>;
}

/**
 * A `deal.outcome.updated` waiting to be published, written in the same transaction as its deal
 * record: so the event exists only once the deal write succeeded (spec, ingest rule 7), and exists
 * exactly once per deal write (its `eventId` is the primary key).
 */
export interface DealOutboxEntry {
  /** Stable id of the deal write; use it as the message id (CloudEvents `ce_id`). */
  eventId: string;
  callId: string;
  /** The deal record as written. */
  payload: DealRecord;
  /** The deal's `recordedAt`. */
  createdAt: string;
  /** ISO instant of `markPublished`; null until then. */
  publishedAt: string | null;
}

export interface DealStore extends ProjectionWriter {
  /** The call's deal record (one per call; a later deal write replaces it). */
  get(callId: string): Promise<DealRecord | undefined>;
  /** The team's deal records, most recently recorded first. */
  listByTeam(teamId: string, options?: { limit?: number }): Promise<DealRecord[]>;
  /** Outbox entries not yet marked published, oldest write first. */
  unpublished(limit: number): Promise<DealOutboxEntry[]>;
  /** Marks entries published (unknown or already published ids are ignored). */
  markPublished(eventIds: readonly string[], at: Date): Promise<void>;
}

/** What each read-model adapter returns. */
export interface ReadModels {
  callHistory: CallHistoryStore;
  deals: DealStore;
  /** Registered webhooks and their delivery outbox (webhook-store.ts). */
  webhooks: WebhookStore;
  /** Releases what the adapter opened (not a database handle it was given). */
  close(): Promise<void>;
}

/** `expectedCheckpoint` did not hold: re-read `checkpoint()` and resume from `stored`. */
export class CheckpointMismatchError extends Error {
  readonly code = 'CHECKPOINT_MISMATCH';
  readonly retriable = true;
  constructor(
    readonly expected: bigint,
    readonly stored: bigint,
  ) {
    super(`projection checkpoint is ${stored}, expected ${expected}; resume from the stored checkpoint`);
    this.name = 'CheckpointMismatchError';
  }
}

/** A list query the store cannot answer as asked; the read API answers 400. */
export class InvalidQueryError extends Error {
  readonly code = 'INVALID_QUERY';
  readonly retriable = false;
  constructor(
    readonly field:
      'limit' | 'status' | 'cursor' | 'tags' | 'search' | 'from' | 'to' | 'repEmail' | 'updatedSince' | 'order',
    message: string,
  ) {
    super(message);
    this.name = 'InvalidQueryError';
  }
}

/**
 * The read-model storage cannot be reached or refused the operation for a reason worth retrying
 * (connection lost, server shutting down, too many connections). The read API answers 503.
 */
export class ReadModelUnavailableError extends unavailableError('READ_MODEL_UNAVAILABLE') {}
