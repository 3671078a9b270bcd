/**
 * Reads a `calls.submitted.v1` record into CallSubmitted data, or says why it cannot: such a record
 * goes to the dead-letter topic instead of blocking its partition.
 */
import { type CloudEvent, fromRecord } from '../../shared/cloudevents.ts';
import type { PersonalData } from '../../shared/adapters/crypto/personal-data.ts';
import type { Json } from '../../shared/ports/event-store.ts';
import { callEvents } from '../../shared/domain/call/call-catalogue.ts';
import { CALL_SUBMITTED_TYPE, type CallSubmittedData } from '../../shared/domain/call/call-submitted.ts';
import type { LogRecord } from '../../shared/ports/event-log.ts';

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

/** The record's data checked against CallSubmitted as the call catalogue stores it (call-catalogue.ts). */
const checked = (record: Pick<LogRecord, 'key'>, event: CloudEvent<unknown>): ParsedCallSubmitted => {
  if (event.type !== CALL_SUBMITTED_TYPE)
    return { ok: false, reason: `unexpected event type ${event.type} (expected ${CALL_SUBMITTED_TYPE})` };
  const parsed = callEvents.parse('CallSubmitted', event.data);
  if (!parsed.ok) return { ok: false, reason: `invalid CallSubmitted: ${parsed.field || '/'} ${parsed.reason}` };
  const { data } = parsed.event;
  if (!data.submission.transcript && !data.submission.audioUrl)
    return { ok: false, reason: 'invalid CallSubmitted: neither transcript nor audioUrl' };
  if (data.callId !== record.key)
    return { ok: false, reason: `record key ${record.key} differs from callId ${data.callId}` };
  return { ok: true, data };
};
