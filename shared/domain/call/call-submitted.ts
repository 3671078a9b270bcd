/**
 * CallSubmitted: what the ingress writes to `calls.submitted.v1` before it answers 201, and the
 * first event of stream `call-{callId}`.
 */
import type { Submission } from '../submission/submission.ts';
import type { Attribution } from '../team/match-member.ts';

export interface CallSubmittedData {
  callId: string;
  teamId: string;
  /** The API key that submitted the call (its id, never the secret). */
  keyId: string;
  /** ISO 8601 instant the ingress accepted the call. */
  submittedAt: string;
  submission: Submission;
  /** Who tags and notes attach to: the member matched by repEmail, else the team owner. */
  attributedTo: Attribution;
  /** Capacity reserved for the call at submission; settled when the real length is known. */
  capacity: { reservedMinutes: number; autoRechargedMinutes: number };
  /** What the ingress changed or ignored (also in the 201 body). */
  warnings: string[];
}

export type CallSubmitted = { type: 'CallSubmitted'; data: CallSubmittedData };

export const CALL_SUBMITTED_TYPE = 'call.submitted';
