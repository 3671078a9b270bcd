/**
 * The deal record: the deal written for a call (spec: "Valid deal data is written to the same deal
 * record that the call page and revenue analytics use"), one per call, built from the call's
 * CallSubmitted data and its DealRecorded event. It is also the payload of `deal.outcome.updated`.
 *
 * `eventId` identifies this deal write for downstream consumers: a UUID (version 5 layout) of
 * `${callId}:${revision}` where `revision` is the DealRecorded event's revision in stream
 * `call-{callId}`. A stored event's revision never changes, so a replay, a redelivery or a rebuild
 * gives the same id, and two different deal writes never share one.
 */
import { createHash } from 'node:crypto';
import type { RecordedEvent } from '../../ports/event-store.ts';
import type { Submission } from '../submission/submission.ts';
import type { DealRecorded } from './call-events.ts';
import type { CallSubmittedData } from './call-submitted.ts';
import { nonBlank } from '../non-blank.ts';

/** The CloudEvents type of a deal record on deals.outcome-updated.v1, and of its webhook. */
export const DEAL_OUTCOME_UPDATED_TYPE = 'deal.outcome.updated';

export type DealRecord = {
  callId: string;
  teamId: string;
  repName: string | null;
  repEmail: string | null;
  attributedTo: { kind: 'member' | 'owner'; email: string; name: string };
  dealSize: number | null;
  revenueCollected: number | null;
  /** ISO 8601 instant. */
  dealDate: string | null;
  notes: string | null;
  /** When the deal was written (DealRecorded `at`). */
  recordedAt: string;
  /** Stable id of this deal write (see the top of this file). */
  eventId: string;
};

/** What a deal record needs from CallSubmitted: a whole CallSubmittedData fits. */
export type DealCall = Pick<CallSubmittedData, 'callId' | 'teamId' | 'attributedTo'> & {
  submission: Pick<Submission, 'repName' | 'repEmail'>;
};

/** The DealRecorded event as stored: its revision in the call's stream and its data. */
export type RecordedDeal = Pick<RecordedEvent, 'revision'> & { data: DealRecorded['data'] };

/** Namespace of deal write ids (a fixed random UUID; changing it changes every id). */
export const DEAL_EVENT_NAMESPACE = '6d1f3c52-8a0e-4b7e-9f45-2c1d7a9be3f0';

/** RFC 9562 name-based UUID, version 5 (SHA-1), of `name` in `namespace`. */
export const uuidV5 = (name: string, namespace: string): string => {
  const ns = Buffer.from(namespace.replaceAll('-', ''), 'hex');
  if (ns.length !== 16) throw new TypeError(`invalid namespace UUID ${namespace}`);
  const bytes = createHash('sha1').update(ns).update(name, 'utf8').digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x50;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
};

/** The stable id of the deal write at `revision` of the call's stream. */
export const dealEventId = (callId: string, revision: number): string =>
  uuidV5(`${callId}:${revision}`, DEAL_EVENT_NAMESPACE);

/** The deal record a DealRecorded event writes. Pure. */
export const dealRecordOf = (call: DealCall, event: RecordedDeal): DealRecord => {
  const { deal, at } = event.data;
  const { kind, email, name } = call.attributedTo;
  return {
    callId: call.callId,
    teamId: call.teamId,
    repName: nonBlank(call.submission.repName) ?? null,
    repEmail: nonBlank(call.submission.repEmail) ?? null,
    attributedTo: { kind, email, name },
    dealSize: deal.dealSize ?? null,
    revenueCollected: deal.revenueCollected ?? null,
    dealDate: deal.dealDate ?? null,
    notes: deal.notes ?? null,
    recordedAt: at,
    eventId: dealEventId(call.callId, event.revision),
  };
};

/** The part of CallSubmitted data a deal store keeps until the deal is recorded. */
export const dealCallOf = (data: CallSubmittedData): DealCall => ({
  callId: data.callId,
  teamId: data.teamId,
  attributedTo: data.attributedTo,
  submission: { repName: data.submission.repName, repEmail: data.submission.repEmail },
});
