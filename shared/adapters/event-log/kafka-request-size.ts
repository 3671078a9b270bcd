/**
 * How big a produce request gets. kafkajs puts all of one partition's records of a send into one
 * record batch, and the broker refuses a batch over the topic's `max.message.bytes` as a whole
 * (MESSAGE_TOO_LARGE): records that each fit can still be refused together. So the records of a
 * publish are sent in requests of a bounded size, each record's size measured as the broker will
 * count it (its key, value and headers in UTF-8, plus the framing of a record and of its headers,
 * taken generously). Pure.
 */
import type { OutgoingRecord } from '../../ports/event-log.ts';

/**
 * A record's framing in a batch (Kafka's record format v2): its length, attributes, timestamp and
 * offset deltas, key and value lengths and header count are varints of at most 36 bytes together.
 */
const RECORD_FRAMING_BYTES = 40;
/** A header's name and value lengths: two varints. */
const HEADER_FRAMING_BYTES = 10;

/** About the bytes `record` takes in a record batch, never fewer. */
export const recordBytes = (record: OutgoingRecord): number => {
  let bytes = RECORD_FRAMING_BYTES + Buffer.byteLength(record.key) + Buffer.byteLength(record.value);
  for (const [name, value] of Object.entries(record.headers ?? {}))
    bytes += HEADER_FRAMING_BYTES + Buffer.byteLength(name) + Buffer.byteLength(value);
  return bytes;
};

/**
 * At least the bytes `record` takes, counted without reading its text: UTF-8 takes at most three
 * bytes per UTF-16 unit. When this sum over a request stays under its bound, no record needs
 * measuring (an ingest batch of small records, the usual case).
 */
export const recordBytesAtMost = (record: OutgoingRecord): number => {
  let units = record.key.length + record.value.length;
  let headers = 0;
  for (const name in record.headers ?? {}) {
    units += name.length + record.headers![name]!.length;
    headers++;
  }
  return RECORD_FRAMING_BYTES + headers * HEADER_FRAMING_BYTES + 3 * units;
};

/**
 * `items` cut, in order, into runs whose sizes add up to at most `maxBytes`; an item larger than
 * that on its own is a run of its own.
 */
export const runsOf = <T>(items: readonly T[], sizeOf: (item: T) => number, maxBytes: number): T[][] => {
  const runs: T[][] = [];
  let run: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = sizeOf(item);
    if (run.length > 0 && bytes + size > maxBytes) {
      runs.push(run);
      run = [];
      bytes = 0;
    }
    run.push(item);
    bytes += size;
  }
  if (run.length > 0) runs.push(run);
  return runs;
};
