/**
 * A call as the read API shows it: the list item of GET /api/calls and the detail of
 * GET /api/calls/:callId (also the `data` of call.* webhook deliveries).
 */
import type { CallHistoryRow } from './call-history.ts';

/** The call as GET /api/calls lists it. */
export const callListItemView = (row: CallHistoryRow) => ({
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

/** The call as GET /api/calls/:callId shows it. */
export const callDetailView = (row: CallHistoryRow) => ({
  ...callListItemView(row),
  transcript: row.transcript,
  analysis: row.analysis,
  deal: row.deal,
  submission: row.submission,
  updatedAt: row.updatedAt,
});
