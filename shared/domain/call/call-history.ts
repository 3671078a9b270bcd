/**
 * The call history row: one per call, folded from the events of stream `call-{callId}`. It is what
 * the read API lists and shows, and what call history search looks at.
 *
 * Status context (docs/decisions/0004-call-status-and-timeout.md):
 *   status    pending → completed | failed
 *   stage     where a pending call is (the Call aggregate's stage); null once finished
 *   statusReason
 *     pending    `queued_for_processing` (as in the 201 body) until processing starts, then the
 *                stage: `fetching_audio`, `transcribing`, `analysing`, `recording_deal`, `completing`
 *     completed  `completed`
 *     failed     the CallFailed reason (`processing_timeout` for a timeout)
 *   processingError  the CallFailed code; null unless failed
 *   A retried call (CallRetried) is pending again at the stage it resumes at, without its error.
 *
 * Details appear as they are recorded: `transcript` with TranscriptRecorded (the primary
 * transcript: the audio's for an audio call), `analysis` and `score` with CallAnalysed, `deal` with
 * DealRecorded (the deal as written, not merely as submitted; the submitted one is in
 * `submission.deal`). `title` is the displayed title by the spec's title rules, so it changes from
 * the generic title to the AI title when analysis arrives.
 *
 * Search (spec, "Call history search"): an exact, case-insensitive substring of the displayed title
 * or of the rep name, nothing else. `foldForSearch` is the one case folding used for rows and
 * queries alike, in every adapter.
 *
 * CallErased removes the row: `evolveHistoryRow` answers undefined, and every adapter deletes the
 * stored row of each call `erasedCallIds` names, so a replay after an erasure has no row for it.
 *
 * Status and stage are not worked out here: the row keeps the call's steps and folds each event
 * through the call's own lifecycle (`evolveLifecycle`, call-state.ts), the state machine the
 * aggregate folds through; this file only adds the details each event records.
 *
 * `evolveHistoryRow` is pure and idempotent: an event at or before `lastPosition` changes nothing,
 * so a redelivered or replayed batch leaves the row as it was.
 */
import type { Decoded } from '../event-catalogue.ts';
import type { RecordedEvent } from '../../ports/event-store.ts';
import type { Deal, NormalisedTranscript, Submission } from '../submission/submission.ts';
import type { MetadataValue } from '../submission/tags-and-metadata.ts';
import type { CallEvent, Insight, ScoreComponent } from './call-events.ts';
import { callIdOfStream } from './call-catalogue.ts';
import type { CallSubmittedData } from './call-submitted.ts';
import { type CallLifecycle, type CallStage, type CallSteps, evolveLifecycle, stageOf } from './call-state.ts';
import { displayedTitle } from './title.ts';
import { nonBlank } from '../non-blank.ts';
import { trimWhiteSpace } from '../white-space.ts';

/** A stored event of a call's stream, decoded through the call catalogue. */
export type RecordedCallEvent = Decoded<CallEvent>;

export type CallHistoryStatus = 'pending' | 'completed' | 'failed';

/**
 * The submission as history keeps it: every normalised field except the inline transcript's text,
 * of which only `truncated` and `originalBytes` remain. The primary transcript is the row's
 * `transcript` (the same text for a transcript-only call; for a call with audio the spec says the
 * inline one "is not stored as the primary transcript"), so history never holds 500 KB twice and
 * never rewrites it when the status changes.
 */
export type HistorySubmission = Omit<Submission, 'transcript'> & { transcript?: Omit<NormalisedTranscript, 'text'> };

export const CALL_HISTORY_STATUSES: readonly CallHistoryStatus[] = ['pending', 'completed', 'failed'];

export interface CallHistoryRow {
  callId: string;
  teamId: string;
  /** The displayed title (title rules 1–3). */
  title: string;
  /** The submitted repName (not the matched member's name); null when none was sent. */
  repName: string | null;
  repEmail: string | null;
  status: CallHistoryStatus;
  /** Where a pending call is; null once completed or failed. */
  stage: CallStage | null;
  statusReason: string;
  /** The CallFailed code; null unless failed. */
  processingError: string | null;
  /** The submitted callDate, else the submission time (ISO 8601 instant). */
  callDate: string;
  /** The real length once known (audio, transcript estimate), else the normalised submitted duration. */
  durationSeconds: number | null;
  tags: string[];
  notes: string | null;
  metadata: Record<string, MetadataValue>;
  /** Who tags and notes attach to: the member matched by repEmail, else the team owner. */
  attributedTo: { kind: 'member' | 'owner'; email: string; name: string };
  /** When the call was accepted (CallSubmitted `submittedAt`); history is ordered by it. */
  createdAt: string;
  /** The primary transcript, once recorded. */
  transcript: { text: string; source: 'audio' | 'inline'; truncated: boolean } | null;
  analysis: { title: string; summary: string; score: number; components: ScoreComponent[]; insights: Insight[] } | null;
  /** The deal as written (DealRecorded); null fields where the submission sent none. */
  deal: {
    dealSize: number | null;
    revenueCollected: number | null;
    dealDate: string | null;
    notes: string | null;
  } | null;
  /** The normalised submission as accepted, without the inline transcript's text (see HistorySubmission). */
  submission: HistorySubmission;
  score: number | null;
  /** Time of the last event applied (its `at`, or `submittedAt`). */
  updatedAt: string;
  /** Global position of the last event applied, as a decimal string. */
  lastPosition: string;
  /**
   * The steps the call has been through, as the call's own lifecycle folds them (`evolveLifecycle`):
   * status and stage follow from them. Absent from rows stored before it was kept (`stepsOfRow`).
   */
  steps?: CallSteps;
}

/** The calls a batch erases (CallErased), whose stored rows go. */
export const erasedCallIds = (events: readonly Pick<RecordedEvent, 'type' | 'streamId'>[]): string[] => {
  const ids: string[] = [];
  for (const event of events) {
    if (event.type !== 'CallErased') continue;
    const callId = callIdOfStream(event.streamId);
    if (callId !== undefined) ids.push(callId);
  }
  return ids;
};

/** The status reason of a pending call at each stage. */
export const PENDING_STATUS_REASONS: Readonly<Record<CallStage, string>> = {
  queued: 'queued_for_processing',
  fetching_audio: 'fetching_audio',
  transcribing: 'transcribing',
  analysing: 'analysing',
  recording_deal: 'recording_deal',
  completing: 'completing',
};

export const COMPLETED_STATUS_REASON = 'completed';

const titleOf = (submission: HistorySubmission, createdAt: string, aiTitle: string | undefined): string =>
  displayedTitle({
    aiTitleEnabled: submission.aiTitleEnabled,
    callTitle: submission.callTitle,
    aiTitle,
    repName: submission.repName,
    repEmail: submission.repEmail,
    callDate: submission.callDate ?? createdAt,
  });

/** The submission without the inline transcript's text. */
export const historySubmission = ({ transcript, ...rest }: Submission): HistorySubmission =>
  transcript
    ? { ...rest, transcript: { truncated: transcript.truncated, originalBytes: transcript.originalBytes } }
    : rest;

const submittedRow = (data: CallSubmittedData, position: bigint): CallHistoryRow => {
  const submission = historySubmission(data.submission);
  const { kind, email, name } = data.attributedTo;
  return {
    callId: data.callId,
    teamId: data.teamId,
    title: titleOf(submission, data.submittedAt, undefined),
    repName: nonBlank(submission.repName) ?? null,
    repEmail: nonBlank(submission.repEmail) ?? null,
    status: 'pending',
    stage: 'queued',
    statusReason: PENDING_STATUS_REASONS.queued,
    processingError: null,
    callDate: submission.callDate ?? data.submittedAt,
    durationSeconds: submission.duration?.seconds ?? null,
    tags: [...submission.tags],
    notes: submission.notes ?? null,
    metadata: { ...submission.metadata },
    attributedTo: { kind, email, name },
    createdAt: data.submittedAt,
    transcript: null,
    analysis: null,
    deal: null,
    submission,
    score: null,
    updatedAt: data.submittedAt,
    lastPosition: position.toString(),
    steps: {
      audioFetched: false,
      transcribed: false,
      analysed: false,
      dealRecorded: false,
      dealDue: !!submission.deal,
    },
  };
};

const dealOf = (deal: Deal): NonNullable<CallHistoryRow['deal']> => ({
  dealSize: deal.dealSize ?? null,
  revenueCollected: deal.revenueCollected ?? null,
  dealDate: deal.dealDate ?? null,
  notes: deal.notes ?? null,
});

/**
 * The steps of a row stored before rows kept them, from what it shows: the mode follows from the
 * submission (audio whenever there is a recording link), the stage tells where a pending call is.
 */
export const stepsOfRow = (row: CallHistoryRow): CallSteps => {
  if (row.steps) return row.steps;
  const audio = row.submission.audioUrl !== undefined;
  const started = row.status !== 'pending' || row.stage !== 'queued';
  return {
    ...(started ? { mode: audio ? ('audio' as const) : ('transcript' as const) } : {}),
    audioFetched: audio && (row.transcript !== null || (row.status === 'pending' && row.stage === 'transcribing')),
    transcribed: row.transcript !== null,
    analysed: row.analysis !== null,
    dealRecorded: row.deal !== null,
    dealDue: row.submission.deal !== undefined,
  };
};

/** The call's lifecycle as the row holds it. */
const lifecycleOfRow = (row: CallHistoryRow): CallLifecycle => {
  const steps = stepsOfRow(row);
  return row.status === 'pending'
    ? { status: 'pending', stage: row.stage ?? stageOf(steps), steps }
    : { status: row.status, steps };
};

/** Status, stage, status reason and steps of a row whose call is now at `lifecycle`. */
const atLifecycle = (
  lifecycle: Exclude<CallLifecycle, { status: 'absent' | 'erased' }>,
  reason: { failed?: string },
): Pick<CallHistoryRow, 'status' | 'stage' | 'statusReason' | 'steps'> => {
  switch (lifecycle.status) {
    case 'pending':
      return {
        status: 'pending',
        stage: lifecycle.stage,
        statusReason: PENDING_STATUS_REASONS[lifecycle.stage],
        steps: lifecycle.steps,
      };
    case 'completed':
      return { status: 'completed', stage: null, statusReason: COMPLETED_STATUS_REASON, steps: lifecycle.steps };
    case 'failed':
      return { status: 'failed', stage: null, statusReason: reason.failed ?? '', steps: lifecycle.steps };
  }
};

/** The details `event` records, on top of the row (status and stage aside). */
const withDetails = (row: CallHistoryRow, event: CallEvent): CallHistoryRow => {
  switch (event.type) {
    case 'ProcessingStarted':
    case 'AudioFetched':
      return { ...row, updatedAt: event.data.at };
    case 'TranscriptRecorded': {
      const { text, source, truncated, durationSeconds, at } = event.data;
      return {
        ...row,
        transcript: { text, source, truncated },
        durationSeconds: durationSeconds ?? row.durationSeconds,
        updatedAt: at,
      };
    }
    case 'CallAnalysed': {
      const { title, summary, score, components, insights, at } = event.data;
      return {
        ...row,
        title: titleOf(row.submission, row.createdAt, title),
        analysis: { title, summary, score, components, insights },
        score,
        updatedAt: at,
      };
    }
    case 'DealRecorded':
      return { ...row, deal: dealOf(event.data.deal), updatedAt: event.data.at };
    case 'CallCompleted':
      return { ...row, durationSeconds: event.data.durationSeconds ?? row.durationSeconds, updatedAt: event.data.at };
    case 'CallFailed':
      return { ...row, processingError: event.data.code, updatedAt: event.data.at };
    case 'CallRetried':
      return { ...row, processingError: null, updatedAt: event.data.at };
    case 'CallSubmitted':
    case 'CallErased':
      return row;
  }
};

/**
 * The fields of a row that an event after its CallSubmitted can change: what withDetails and
 * atLifecycle set, and lastPosition. Every other field is set from CallSubmitted, and each later
 * version of the row keeps its value (the same object). A rebuild counts a row's size from the
 * fields listed here (history-rows.ts, rowBytesAfter): an event that changes another field must add
 * it.
 */
export const HISTORY_ROW_FOLDED_FIELDS = [
  'title',
  'status',
  'stage',
  'statusReason',
  'processingError',
  'durationSeconds',
  'transcript',
  'analysis',
  'deal',
  'score',
  'updatedAt',
  'lastPosition',
  'steps',
] as const satisfies readonly (keyof CallHistoryRow)[];

/**
 * The row after `event`. Pure. Events of other streams, events at or before `row.lastPosition`,
 * events the call's lifecycle does not take in its state (a late result never revives a failed
 * call; only an operator's CallRetried does) and events of a call without a row leave the input as
 * it is. CallErased answers undefined: an erased call has no row
 * (docs/decisions/0014-erasure-crypto-shredding.md); adapters delete a stored one.
 */
export const evolveHistoryRow = (
  row: CallHistoryRow | undefined,
  event: RecordedCallEvent,
): CallHistoryRow | undefined => {
  const callId = callIdOfStream(event.streamId);
  if (callId === undefined) return row;
  if (row === undefined) return event.type === 'CallSubmitted' ? submittedRow(event.data, event.position) : undefined;
  if (row.callId !== callId)
    throw new Error(`event of stream ${event.streamId} applied to the row of call ${row.callId}`);
  if (event.position <= BigInt(row.lastPosition)) return row;
  const before = lifecycleOfRow(row);
  const after = evolveLifecycle(before, event);
  if (after === before) return row;
  if (after.status === 'absent' || after.status === 'erased') return undefined;
  const failed = event.type === 'CallFailed' ? event.data.reason : undefined;
  return {
    ...withDetails(row, event),
    ...atLifecycle(after, { failed }),
    lastPosition: event.position.toString(),
  };
};

// ---------------------------------------------------------------------------------------------
// Search

/**
 * Case folding for search, the same for stored text and queries: Unicode full case folding
 * (CaseFolding.txt, statuses C and F, without the Turkic T mappings) of the text in NFC, the result
 * in NFC. So "MÜLLER" finds "Müller", "STRASSE", "straße" and "STRAẞE" fold alike (ß and ẞ to
 * ss), final ς folds like σ, ſ like s, and canonically equivalent spellings (a precomposed "ü" and
 * "u" + combining diaeresis) fold alike. Dotless ı folds to itself, as the standard has it: it does
 * not match i or I (İ folds to i + U+0307, so a search for "i" finds it). Nothing else is
 * normalised: accents, spaces and punctuation must match exactly.
 *
 * Made from the runtime's own case mappings (ICU's, of its Unicode version): upper case then lower
 * case is the full case folding but for three things, each put right here: JavaScript lower-cases
 * Σ by context (ς → σ), ẞ lower-cases to ß (→ ss, as ß itself folds), and ı upper-cases to I
 * (kept as ı). One difference remains that matching cannot see: Cherokee folds to its small
 * letters where CaseFolding.txt uses the capitals.
 *
 * Stored folds are versioned (SEARCH_FOLD_REVISION): a change here is a new revision
 * (docs/decisions/0023-search-fold-revisions.md).
 */
export const foldForSearch = (text: string): string =>
  text
    .normalize('NFC')
    .split('ı')
    .map((part) => part.toUpperCase().toLowerCase())
    .join('ı')
    .replaceAll('ς', 'σ')
    .replaceAll('ß', 'ss')
    .normalize('NFC');

/**
 * The revision of the folding stored rows hold (their folded title and rep name, their tag keys):
 *   1  upper case then lower case (ẞ folded to ß, ı to i); tags trimmed by trim(), U+FEFF too
 *   2  full case folding, as foldForSearch says; tags trimmed of white space only (tagKey)
 * Each store records the revision a version of the call history was folded with and refolds, when
 * it opens an older one, the rows whose folds the change touches (SEARCH_REFOLD_CHARACTERS).
 */
export const SEARCH_FOLD_REVISION = 2;

/** Rows whose title, rep name or tags hold one of these fold differently since revision 1. */
export const SEARCH_REFOLD_CHARACTERS: readonly string[] = ['ẞ', 'ı', '\ufeff'];

/**
 * The folded search term for a query, trimmed of white space as the service means it (U+FEFF is
 * kept: ../white-space.ts); undefined (no filter) when the query is empty or blank.
 */
export const searchTerm = (query: string | undefined): string | undefined => {
  const trimmed = query === undefined ? undefined : trimWhiteSpace(query);
  return trimmed ? foldForSearch(trimmed) : undefined;
};

/** The two texts search looks at (rule 1), folded. An absent rep name is the empty string. */
export const searchText = (row: Pick<CallHistoryRow, 'title' | 'repName'>): { title: string; repName: string } => ({
  title: foldForSearch(row.title),
  repName: foldForSearch(row.repName ?? ''),
});

/** Whether a row matches a search query: the reference every store's search must agree with. */
export const matchesSearch = (row: Pick<CallHistoryRow, 'title' | 'repName'>, query: string | undefined): boolean => {
  const term = searchTerm(query);
  if (term === undefined) return true;
  const { title, repName } = searchText(row);
  return title.includes(term) || repName.includes(term);
};

/**
 * Tags are filtered case-insensitively with the same folding; a row matches when it has every tag.
 * Trimmed as the ingest trims a tag (white space only, U+FEFF kept), so a query's tag and a stored
 * one compare alike.
 */
export const tagKey = (tag: string): string => foldForSearch(trimWhiteSpace(tag));
