/**
 * A call as the read API shows it: the list item of GET /api/calls and the detail of
 * GET /api/calls/:callId (also the `data` of call.* webhook deliveries).
 */
import type { CallHistoryRow } from './call-history.ts';

/** The fields of a row GET /api/calls shows for each call. */
export const CALL_LIST_ITEM_FIELDS = [
  'callId',
  'title',
  'repName',
  'repEmail',
  'status',
  'stage',
  'statusReason',
  'processingError',
  'callDate',
  'durationSeconds',
  'tags',
  'notes',
  'metadata',
  'attributedTo',
  'score',
  'createdAt',
] as const satisfies readonly (keyof CallHistoryRow)[];

/**
 * What a list reads of each row: the fields its items show and `updatedAt`, the position of a page
 * of `updated_asc`. Never the transcript, analysis, deal or submission: those are the detail's.
 */
export const CALL_LIST_ROW_FIELDS = [...CALL_LIST_ITEM_FIELDS, 'updatedAt'] as const;

/** A row as a list reads it. */
export type CallListRow = Pick<CallHistoryRow, (typeof CALL_LIST_ROW_FIELDS)[number]>;

/** The call as GET /api/calls lists it. */
export const callListItemView = (row: CallListRow) => ({
  callId: row.callId,
  title: row.title,
  repName: row.repName,
  repEmail: row.repEmail,
  status: row.status,
  stage: row.stage,
  statusReason: row.statusReason,
  processingError: row.processingError,
  callDate: row.callDate,
  durationSeconds: row.durationSeconds,
  tags: row.tags,
  notes: row.notes,
  metadata: row.metadata,
  attributedTo: row.attributedTo,
  score: row.score,
  createdAt: row.createdAt,
});

// The list item shows exactly CALL_LIST_ITEM_FIELDS: a compile error here means the two drifted apart.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const _listItemShowsItsFields: Same<keyof ReturnType<typeof callListItemView>, (typeof CALL_LIST_ITEM_FIELDS)[number]> =
  true;
void _listItemShowsItsFields;

/** The call as GET /api/calls/:callId shows it. */
export const callDetailView = (row: CallHistoryRow) => ({
  ...callListItemView(row),
  transcript: row.transcript,
  analysis: row.analysis,
  deal: row.deal,
  submission: row.submission,
  updatedAt: row.updatedAt,
});
