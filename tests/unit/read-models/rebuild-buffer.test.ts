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
  rowBytesAfter,
  type RowChange,
} from '../../../shared/adapters/read-models/history-rows.ts';
import { RebuildBuffer } from '../../../shared/adapters/read-models/rebuild-buffer.ts';
import {
  type CallHistoryRow,
  evolveHistoryRow,
  HISTORY_ROW_FOLDED_FIELDS,
} from '../../../shared/domain/call/call-history.ts';
import type { CallEvent, CallEventType } from '../../../shared/domain/call/call-events.ts';
import type { RecordedEvent } from '../../../shared/ports/event-store.ts';
import { at, events, submittedData } from '../../conformance/read-models-fixtures.ts';
import { recordedCallEvents, storedCallEvents } from '../../support/recorded-events.ts';

/** A submission with every text field at its limit (the metadata values in emoji, two UTF-16 units each). */
const largeSubmission = (i: number) => ({
  aiTitleEnabled: false,
  callTitle: `${i} `.padEnd(500, 't'),
  tags: Array.from({ length: 20 }, (_, t) => `${t} `.padEnd(50, 'g')),
  notes: 'n'.repeat(2000),
  deal: { dealSize: 1000, notes: 'd'.repeat(2000) },
  metadata: Object.fromEntries(Array.from({ length: 20 }, (_, k) => [`${k} `.padEnd(100, 'k'), '😀'.repeat(1000)])),
});

/** A call with every text field at its limit. */
const largeCall = (i: number): RecordedEvent[] => {
  const data = submittedData({ callId: `call-${i}`, teamId: 'team-1', submission: largeSubmission(i) });
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

test('jsonBytes leaves out a property whose value is undefined, as JSON does', () => {
  assert.equal(jsonBytes({ a: 'x', b: undefined }), jsonBytes({ a: 'x' }));
});

/** A call at the size limits through every kind of event that changes its row, in an order its lifecycle takes. */
const everyStep = (): CallEvent[] => {
  const failure = { code: 'audio_fetch_failed', reason: 'The recording could not be downloaded (HTTP 404)', at: at(3) };
  return [
    // The AI title replaces the generic one when the analysis comes.
    events.submitted(
      submittedData({
        callId: 'call-0',
        teamId: 'team-1',
        submission: { ...largeSubmission(0), aiTitleEnabled: true },
      }),
    ),
    events.started('audio'),
    events.audioFetched(),
    { type: 'CallFailed', data: failure },
    {
      type: 'CallRetried',
      data: {
        previousFailure: failure,
        resumesAt: 'transcribing',
        capacity: { reservedMinutes: 1, autoRechargedMinutes: 0 },
        at: at(4),
      },
    },
    events.transcript('Rep: '.padEnd(100_000, 'x'), 'audio', 5),
    events.analysed('An analysed title', 64, 6),
    events.dealRecorded({ dealSize: 2000, notes: 'n'.repeat(2000) }, 7),
    events.completed(8),
  ];
};

/** Every kind of call event: a kind added to CallEvent must be added here (and to everyStep when it changes a row). */
const EVENT_TYPES: Record<CallEventType, true> = {
  CallSubmitted: true,
  ProcessingStarted: true,
  AudioFetched: true,
  TranscriptRecorded: true,
  CallAnalysed: true,
  DealRecorded: true,
  CallCompleted: true,
  CallFailed: true,
  CallRetried: true,
  CallErased: true,
};

/** Each version of the row as everyStep folds it, event by event. */
const versions = (): { type: string; row: CallHistoryRow }[] => {
  let row: CallHistoryRow | undefined;
  return recordedCallEvents(everyStep(), 'call-0').map((event) => {
    const next = evolveHistoryRow(row, event);
    assert.ok(next && next !== row, `${event.type} changes the row`);
    row = next;
    return { type: event.type, row };
  });
};

test('folding changes no field of a row but HISTORY_ROW_FOLDED_FIELDS, whatever the event', () => {
  const steps = versions();
  assert.deepEqual(
    new Set(steps.map((s) => s.type)),
    new Set(Object.keys(EVENT_TYPES).filter((type) => type !== 'CallErased')),
    'every kind of event that leaves a row is folded',
  );
  const folded = new Set<string>(HISTORY_ROW_FOLDED_FIELDS);
  for (let i = 1; i < steps.length; i++) {
    const { row: before } = steps[i - 1]!;
    const { type, row: after } = steps[i]!;
    for (const key of new Set([...Object.keys(before), ...Object.keys(after)]))
      if (!folded.has(key))
        assert.equal(
          after[key as keyof CallHistoryRow],
          before[key as keyof CallHistoryRow],
          `${type} keeps ${key} as it was`,
        );
  }
});

test('rowBytesAfter counts a row folded further, or as stored, as jsonBytes walking it does', () => {
  const steps = versions();
  let counted = jsonBytes(steps[0]!.row);
  for (let i = 1; i < steps.length; i++) {
    const { row: before } = steps[i - 1]!;
    const { type, row: after } = steps[i]!;
    counted = rowBytesAfter(before, counted, after);
    assert.equal(counted, jsonBytes(after), `after ${type}`);
    assert.equal(rowBytesAfter(after, counted, docRow(after)), jsonBytes(docRow(after)), `${type}, as stored`);
  }
  // Each field it may change, changed alone (a row stored before rows kept their steps has none).
  const row = steps.at(-1)!.row;
  const { steps: _steps, ...withoutSteps } = row;
  assert.equal(rowBytesAfter(withoutSteps, jsonBytes(withoutSteps), row), jsonBytes(row), 'steps added');
  assert.equal(rowBytesAfter(row, jsonBytes(row), withoutSteps), jsonBytes(withoutSteps), 'steps gone');
  for (const field of HISTORY_ROW_FOLDED_FIELDS) {
    const changed = { ...row, [field]: { changed: 'y'.repeat(1000) } };
    assert.equal(rowBytesAfter(row, jsonBytes(row), changed), jsonBytes(changed), field);
  }
});

test('a row that grows after its first window counts as it grows: large transcripts recorded later flush within the budget', async () => {
  const budget = 4 * 1024 * 1024;
  const flushes: number[][] = [];
  const buffer = new RebuildBuffer<LoadedRow>(
    {
      load: async () => new Map(),
      flush(changes) {
        // What the window held: each row with its transcript.
        flushes.push(changes.map(({ after }) => 2 * JSON.stringify(after).length));
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
  const calls = 100;
  const transcript = 'Rep: '.padEnd(100_000, 'x');
  const ids = Array.from({ length: calls }, (_, i) => `call-${i}`);
  // All submitted first (small rows), then each transcribed (100 KB each, 200 KB in UTF-16), 5 a batch.
  const submitted = ids.flatMap((callId, i) =>
    storedCallEvents([events.submitted(submittedData({ callId, teamId: 'team-1' }))], callId, BigInt(i + 1)),
  );
  await buffer.apply(submitted, submitted.at(-1)!.position, undefined);
  const perBatch = 5;
  for (let i = 0; i < calls; i += perBatch) {
    const batch = ids.slice(i, i + perBatch).flatMap((callId, j) => {
      const [, ...later] = storedCallEvents(
        [
          events.submitted(submittedData({ callId, teamId: 'team-1' })),
          events.started(),
          events.transcript(transcript),
        ],
        callId,
        BigInt(calls + 3 * (i + j) + 1),
      );
      return later.map((event, k) => ({ ...event, revision: k + 1 }));
    });
    await buffer.apply(batch, batch.at(-1)!.position, undefined);
  }
  await buffer.flush();
  const sum = (list: number[]) => list.reduce((a, b) => a + b, 0);
  const rows = flushes.flat();
  assert.ok(sum(rows) > 4 * budget, `the calls write ${sum(rows)} bytes`);
  const slack = perBatch * Math.max(...rows);
  for (const flush of flushes)
    assert.ok(sum(flush) <= budget + slack, `a flush of ${sum(flush)} bytes, over ${budget}`);
});
