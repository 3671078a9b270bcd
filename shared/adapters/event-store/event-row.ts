import type { Json, RecordedEvent } from '../../ports/event-store.ts';

/**
 * A row of the SQL event stores' `events` table as its driver hands it: `Doc` is how the JSON
 * columns arrive (text in SQLite, parsed jsonb in PostgreSQL), `Time` how `recorded_at` does
 * (epoch milliseconds, or a Date); `position` is a number or a bigint's decimal text.
 */
export interface EventRow<Doc, Time> {
  position: number | string;
  stream_id: string;
  revision: number;
  id: string;
  type: string;
  data: Doc;
  metadata: Doc;
  recorded_at: Time;
}

/** The one mapping of an events row to a RecordedEvent, given how the driver's JSON and time read. */
export const eventRowMapper =
  <Doc, Time>(json: (doc: Doc) => Json, time: (at: Time) => Date) =>
  (row: EventRow<Doc, Time>): RecordedEvent => ({
    id: row.id,
    streamId: row.stream_id,
    revision: row.revision,
    position: BigInt(row.position),
    type: row.type,
    data: json(row.data),
    metadata: json(row.metadata) as Record<string, Json>,
    recordedAt: time(row.recorded_at),
  });
