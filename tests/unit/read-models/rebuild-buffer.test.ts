/**
 * A rebuild's buffer writes within its byte budget whatever the rows hold: calls at the size limits
 * (metadata, notes, tags, title) make rows of ~200 KB of JSON, which must count as such.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  docRow,
  jsonBytes,
  type LoadedRow,
  type RowChange,
} from '../../../shared/adapters/read-models/history-rows.ts';
import { RebuildBuffer } from '../../../shared/adapters/read-models/rebuild-buffer.ts';
import type { RecordedEvent } from '../../../shared/ports/event-store.ts';
import { events, submittedData } from '../../conformance/read-models-fixtures.ts';
import { storedCallEvents } from '../../support/recorded-events.ts';

/** A call with every text field at its limit (the metadata values in emoji, two UTF-16 units each). */
const largeCall = (i: number): RecordedEvent[] => {
  const data = submittedData({
    callId: `call-${i}`,
    teamId: 'team-1',
    submission: {
      aiTitleEnabled: false,
      callTitle: `${i} `.padEnd(500, 't'),
      tags: Array.from({ length: 20 }, (_, t) => `${t} `.padEnd(50, 'g')),
      notes: 'n'.repeat(2000),
      deal: { dealSize: 1000, notes: 'd'.repeat(2000) },
      metadata: Object.fromEntries(Array.from({ length: 20 }, (_, k) => [`${k} `.padEnd(100, 'k'), '😀'.repeat(1000)])),
    },
  });
  return storedCallEvents(
    [events.submitted(data), events.started(), events.completed()],
    data.callId,
    BigInt(3 * i + 1),
  );
};

/** The bytes of each row a flush writes, as JSON in UTF-16. */
const rowBytes = (changes: RowChange<LoadedRow>[]): number[] =>
  changes.map(({ after }) => 2 * JSON.stringify(docRow(after)).length);

test('rows of calls at the size limits count as the JSON they write: a rebuild flushes within its byte budget', async () => {
  const budget = 4 * 1024 * 1024;
  const flushes: number[][] = [];
  const buffer = new RebuildBuffer<LoadedRow>(
    {
      load: async () => new Map(),
      flush(changes) {
        flushes.push(rowBytes(changes));
        return {
          stored: (i) => ({ row: docRow(changes[i]!.after), titleFolded: '', repFolded: '' }),
          written: Promise.resolve(),
        };
      },
    },
    0n,
    true,
    { events: 50_000, bytes: budget },
  );
  const perBatch = 5;
  for (let i = 0; i < 100; i += perBatch) {
    const batch = Array.from({ length: perBatch }, (_, j) => largeCall(i + j)).flat();
    await buffer.apply(batch, batch.at(-1)!.position, undefined);
  }
  await buffer.flush();
  const rows = flushes.flat();
  assert.equal(rows.length, 100);
  const sum = (list: number[]) => list.reduce((a, b) => a + b, 0);
  assert.ok(sum(rows) > 4 * budget, `the calls write ${sum(rows)} bytes`);
  // The budget is checked after each batch: a window passes it by at most one batch's rows.
  const slack = perBatch * Math.max(...rows);
  for (const flush of flushes)
    assert.ok(sum(flush) <= budget + slack, `a flush of ${sum(flush)} bytes, over ${budget}`);
});

test('jsonBytes counts a value about as its JSON comes to, in UTF-16', () => {
  const value = { a: 'x'.repeat(1000), b: ['😀'.repeat(10), null, 3], c: { d: true } };
  const json = 2 * JSON.stringify(value).length;
  assert.ok(Math.abs(jsonBytes(value) - json) < 100, `${jsonBytes(value)} against ${json}`);
});
