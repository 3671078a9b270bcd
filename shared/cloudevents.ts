/**
 * CloudEvents 1.0 over the event log, binary content mode of the Kafka protocol binding: the
 * attributes travel as `ce_*` headers, the value is the event's data as JSON, the key is the
 * subject (the call id) so every event of a call lands on one partition in order.
 */
import type { LogRecord, OutgoingRecord } from './ports/event-log.ts';

export interface CloudEvent<Data = unknown> {
  /** Stable id: the same fact always carries the same id, so consumers can deduplicate. */
  id: string;
  /** e.g. `call.submitted`, `deal.outcome.updated`. */
  type: string;
  /** URI reference of the producer, e.g. `/api/integrations/push-api/ingest`. */
  source: string;
  /** The call id; also the record key. */
  subject: string;
  /** ISO 8601 instant of the fact. */
  time: string;
  data: Data;
  /**
   * Extension attributes (lower-case alphanumeric names), e.g. `teamid`; `traceparent` and
   * `tracestate` are the distributed-tracing extension.
   */
  extensions?: Record<string, string>;
}

export const toRecord = (event: CloudEvent): OutgoingRecord => ({
  key: event.subject,
  value: JSON.stringify(event.data),
  headers: {
    ce_specversion: '1.0',
    ce_id: event.id,
    ce_type: event.type,
    ce_source: event.source,
    ce_subject: event.subject,
    ce_time: event.time,
    'content-type': 'application/json',
    ...Object.fromEntries(Object.entries(event.extensions ?? {}).map(([name, value]) => [`ce_${name}`, value])),
    // The distributed-tracing extension's context also as the plain W3C headers Kafka tracing tools read.
    ...(event.extensions?.traceparent ? { traceparent: event.extensions.traceparent } : {}),
    ...(event.extensions?.tracestate ? { tracestate: event.extensions.tracestate } : {}),
  },
});

/** Reads a record written by `toRecord`; throws a TypeError naming what is missing or malformed. */
export const fromRecord = <Data = unknown>(record: Pick<LogRecord, 'key' | 'value' | 'headers'>): CloudEvent<Data> => {
  const h = record.headers;
  for (const name of ['ce_specversion', 'ce_id', 'ce_type', 'ce_source', 'ce_time'] as const) {
    if (!h[name]) throw new TypeError(`record ${record.key}: missing CloudEvents header ${name}`);
  }
  let data: Data;
  try {
    data = JSON.parse(record.value) as Data;
  } catch (error) {
    throw new TypeError(`record ${record.key}: value is not JSON (${(error as Error).message})`, { cause: error });
  }
  const extensions = Object.fromEntries(
    Object.entries(h)
      .filter(
        ([name]) =>
          name.startsWith('ce_') &&
          !['ce_specversion', 'ce_id', 'ce_type', 'ce_source', 'ce_subject', 'ce_time'].includes(name),
      )
      .map(([name, value]) => [name.slice(3), value]),
  );
  return {
    id: h.ce_id!,
    type: h.ce_type!,
    source: h.ce_source!,
    subject: h.ce_subject ?? record.key,
    time: h.ce_time!,
    data,
    extensions,
  };
};
