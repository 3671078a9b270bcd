/**
 * Redrive (POST /api/admin/topics/calls.dead-letter.v1/redrive): dead letters go back to the
 * topic they came from (`dlq_source_topic`), with their original key, value and headers, the
 * `dlq_*` headers of the dead-lettering replaced by one `dlq_redriven_from` naming the dead
 * letter (`topic/partition/offset`). The consumer handles the copy like any record: it succeeds,
 * or it is dead-lettered again, once, with fresh `dlq_*` headers (its `dlq_redriven_from` kept, so
 * the new dead letter says it was a redrive). Nothing redrives by itself: a record that keeps
 * failing goes round only as often as an operator sends it, and never to the dead-letter topic
 * itself.
 */
import { type EventLog, type LogRecord, type OutgoingRecord, READ_MAX_BYTES } from '../../shared/ports/event-log.ts';
import type { Topics } from '../../shared/topics.ts';

export const REDRIVEN_FROM_HEADER = 'dlq_redriven_from';

export interface RedriveRequest {
  partition?: number;
  /** First offset read in a partition `fromOffsets` does not name. */
  fromOffset: bigint;
  /** First offset read per partition: a previous answer's `nextOffsets`, to page on. */
  fromOffsets?: ReadonlyMap<number, bigint>;
  limit: number;
}

export interface RedriveResult {
  redriven: number;
  /** Each dead letter sent back: where it was, where it came from, where its copy landed. */
  records: {
    partition: number;
    offset: string;
    sourceTopic: string;
    sourcePartition: string | null;
    sourceOffset: string | null;
    redrivenTo: { partition: number; offset: string };
  }[];
  /** Dead letters read but not sent back, and why. */
  skipped: { partition: number; offset: string; reason: string }[];
  /**
   * Where to continue, per partition: the offset after the last dead letter read, or where the
   * read of a partition began when none was. Without `partition` it names every partition of the
   * topic, so sending it back as `fromOffsets` pages on without passing over any dead letter.
   */
  nextOffsets: Record<string, string>;
  /** The same for the one partition asked for (`partition`); null when none was. */
  nextOffset: string | null;
}

/** The copy of a dead letter for its source topic: original key, value and headers, and where it was. */
export const redrivenRecord = (deadLetter: LogRecord): OutgoingRecord => ({
  key: deadLetter.key,
  value: deadLetter.value,
  headers: {
    ...Object.fromEntries(Object.entries(deadLetter.headers).filter(([name]) => !name.startsWith('dlq_'))),
    [REDRIVEN_FROM_HEADER]: `${deadLetter.topic}/${deadLetter.partition}/${deadLetter.offset}`,
  },
});

/** A record's size as a read's byte bound counts it: key, value and headers, in UTF-8. */
const recordBytes = (record: LogRecord): number =>
  Buffer.byteLength(record.key) +
  Buffer.byteLength(record.value) +
  Object.entries(record.headers).reduce(
    (sum, [name, value]) => sum + Buffer.byteLength(name) + Buffer.byteLength(value),
    0,
  );

/** Topics whose records the service dead-letters, so the only ones a dead letter may go back to. */
const sourceTopics = (topics: Topics): Set<string> => new Set([topics.callsSubmitted]);

export const redriveDeadLetters = async (
  eventLog: EventLog,
  topics: Topics,
  request: RedriveRequest,
): Promise<RedriveResult> => {
  const from = (partition: number) => request.fromOffsets?.get(partition) ?? request.fromOffset;
  const partitions =
    request.partition === undefined
      ? Array.from({ length: await eventLog.partitionCount(topics.deadLetter) }, (_, i) => i)
      : [request.partition];
  const nextOffsets: Record<string, string> = {};
  for (const partition of partitions) nextOffsets[String(partition)] = from(partition).toString();
  // The partitions one after the other, each from its own offset, within one answer's bounds: a
  // single offset for every partition would pass over the dead letters of those read less far.
  const deadLetters: LogRecord[] = [];
  let bytes = 0;
  for (const partition of partitions) {
    const left = request.limit - deadLetters.length;
    if (left <= 0 || bytes >= READ_MAX_BYTES) break;
    const read = await eventLog.read(topics.deadLetter, {
      partition,
      fromOffset: from(partition),
      limit: left,
      maxBytes: READ_MAX_BYTES - bytes,
    });
    for (const record of read) {
      const size = recordBytes(record);
      // A read holds one record at least: past the bound, one is left for the next answer.
      if (deadLetters.length > 0 && bytes + size > READ_MAX_BYTES) break;
      deadLetters.push(record);
      bytes += size;
    }
  }
  const allowed = sourceTopics(topics);
  const skipped: RedriveResult['skipped'] = [];
  const bySource = new Map<string, LogRecord[]>();
  for (const record of deadLetters) {
    nextOffsets[String(record.partition)] = (record.offset + 1n).toString();
    const source = record.headers.dlq_source_topic;
    if (source === undefined || !allowed.has(source)) {
      const reason =
        source === undefined
          ? 'no dlq_source_topic header'
          : `its source topic ${source} is not one the service dead-letters from (${[...allowed].join(', ')})`;
      skipped.push({ partition: record.partition, offset: record.offset.toString(), reason });
      continue;
    }
    bySource.set(source, [...(bySource.get(source) ?? []), record]);
  }

  const records: RedriveResult['records'] = [];
  for (const [source, list] of bySource) {
    const positions = await eventLog.publish(source, list.map(redrivenRecord));
    list.forEach((record, i) => {
      records.push({
        partition: record.partition,
        offset: record.offset.toString(),
        sourceTopic: source,
        sourcePartition: record.headers.dlq_source_partition ?? null,
        sourceOffset: record.headers.dlq_source_offset ?? null,
        redrivenTo: { partition: positions[i]!.partition, offset: positions[i]!.offset.toString() },
      });
    });
  }
  const nextOffset = request.partition === undefined ? null : nextOffsets[String(request.partition)]!;
  return { redriven: records.length, records, skipped, nextOffsets, nextOffset };
};
