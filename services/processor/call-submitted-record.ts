/**
 * Reads a `calls.submitted.v1` record into CallSubmitted data, or says why it cannot: such a record
 * goes to the dead-letter topic instead of blocking its partition.
 */
import { type Static, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { type CloudEvent, fromRecord } from '../../shared/cloudevents.ts';
import type { PersonalData } from '../../shared/adapters/crypto/personal-data.ts';
import type { Json } from '../../shared/ports/event-store.ts';
import { CALL_SUBMITTED_TYPE, type CallSubmittedData } from '../../shared/domain/call/call-submitted.ts';
import type { LogRecord } from '../../shared/ports/event-log.ts';

/** The shape the processor relies on (the ingress writes more; extra fields are kept). */
const CallSubmittedRecordSchema = Type.Object({
  callId: Type.String({ minLength: 1 }),
  teamId: Type.String({ minLength: 1 }),
  keyId: Type.String(),
  submittedAt: Type.String({ minLength: 10 }),
  submission: Type.Object({
    aiTitleEnabled: Type.Boolean(),
    tags: Type.Array(Type.String()),
    metadata: Type.Record(Type.String(), Type.Unknown()),
    transcript: Type.Optional(Type.Object({ text: Type.String(), truncated: Type.Boolean() })),
    audioUrl: Type.Optional(Type.String()),
  }),
  attributedTo: Type.Object({
    kind: Type.Union([Type.Literal('member'), Type.Literal('owner')]),
    email: Type.String(),
    name: Type.String(),
  }),
  capacity: Type.Object({ reservedMinutes: Type.Number(), autoRechargedMinutes: Type.Number() }),
  warnings: Type.Array(Type.String()),
});
type Checked = Static<typeof CallSubmittedRecordSchema>;

export type ParsedCallSubmitted = { ok: true; data: CallSubmittedData } | { ok: false; reason: string };

export const parseCallSubmitted = (record: Pick<LogRecord, 'key' | 'value' | 'headers'>): ParsedCallSubmitted => {
  let event;
  try {
    event = fromRecord<unknown>(record);
  } catch (error) {
    return { ok: false, reason: (error as Error).message };
  }
  return checked(record, event);
};

/**
 * As `parseCallSubmitted`, with the record's personal fields decrypted (the one place a log record
 * is opened; docs/decisions/0014-erasure-crypto-shredding.md). `erased`: the record is sealed and
 * its call's key destroyed, so there is nothing to process.
 */
export const readCallSubmitted = async (
  record: Pick<LogRecord, 'key' | 'value' | 'headers'>,
  personalData: PersonalData | undefined,
): Promise<ParsedCallSubmitted | { ok: false; erased: true }> => {
  let event;
  try {
    event = fromRecord<Json>(record);
  } catch (error) {
    return { ok: false, reason: (error as Error).message };
  }
  if (personalData && event.type === CALL_SUBMITTED_TYPE && personalData.isSealed(event.data)) {
    const opened = await personalData.opened(record.key, 'CallSubmitted', event.data);
    if (opened.erased) return { ok: false, erased: true };
    event = { ...event, data: opened.data };
  }
  return checked(record, event);
};

const checked = (record: Pick<LogRecord, 'key'>, event: CloudEvent<unknown>): ParsedCallSubmitted => {
  if (event.type !== CALL_SUBMITTED_TYPE)
    return { ok: false, reason: `unexpected event type ${event.type} (expected ${CALL_SUBMITTED_TYPE})` };
  const first = Value.Errors(CallSubmittedRecordSchema, event.data).First();
  if (first) return { ok: false, reason: `invalid CallSubmitted: ${first.path || '/'} ${first.message}` };
  const data = event.data as Checked;
  if (!data.submission.transcript && !data.submission.audioUrl)
    return { ok: false, reason: 'invalid CallSubmitted: neither transcript nor audioUrl' };
  if (data.callId !== record.key)
    return { ok: false, reason: `record key ${record.key} differs from callId ${data.callId}` };
  return { ok: true, data: event.data as CallSubmittedData };
};
