/**
 * Segments in the call's TranscriptRecorded: recorded bounded when the step gives them, and derived
 * from the text, in one place (the call catalogue's upcaster), for events recorded before they existed.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { callDecider } from '../../../../shared/domain/call/call-decider.ts';
import type { CallEvent } from '../../../../shared/domain/call/call-events.ts';
import type { CallSubmittedData } from '../../../../shared/domain/call/call-submitted.ts';
import { callEvents } from '../../../../shared/domain/call/call-catalogue.ts';
import type { Json, RecordedEvent } from '../../../../shared/ports/event-store.ts';
import { deciderSpec } from '../../../support/decider-spec.ts';
import { renderText } from '../../../../shared/domain/transcript/transcript-export.ts';
import { SEGMENT_LIMITS } from '../../../../shared/domain/transcript/transcript-segments.ts';

const { given } = deciderSpec(callDecider);
const T0 = '2026-11-20T10:00:00.000Z';
const T1 = '2026-11-20T10:00:01.000Z';

/** A stored event of call c1, as the store hands it out (no schemaVersion: version 1). */
const stored = (type: string, data: Json, revision: number, schemaVersion?: number): RecordedEvent => ({
  id: `e${revision}`,
  streamId: 'call-c1',
  revision,
  position: BigInt(revision + 1),
  type,
  data,
  metadata: schemaVersion === undefined ? {} : { schemaVersion },
  recordedAt: new Date(T1),
});

const submitted: CallSubmittedData = {
  callId: 'c1',
  teamId: 't1',
  keyId: 'k1',
  submittedAt: T0,
  submission: { aiTitleEnabled: true, tags: [], metadata: {}, audioUrl: 'https://a.test/x.mp3' },
  attributedTo: { kind: 'owner', email: 'o@acme.test', name: 'Olive' },
  capacity: { reservedMinutes: 1, autoRechargedMinutes: 0 },
  warnings: [],
};
const history: CallEvent[] = [
  { type: 'CallSubmitted', data: submitted },
  { type: 'ProcessingStarted', data: { mode: 'audio', deadline: '2026-11-20T11:00:00.000Z', at: T0 } },
  { type: 'AudioFetched', data: { bytes: 10, contentType: 'audio/wav', at: T0 } },
];
const record = {
  type: 'RecordTranscript',
  source: 'audio',
  text: 'hello there how are you',
  truncated: false,
  durationSeconds: 3,
  engine: 'pocketsphinx',
  now: T1,
} as const;

describe('TranscriptRecorded segments', () => {
  test("the step's segments are recorded, bounded (times to the ms, blank ones dropped)", () => {
    given(history)
      .when({
        ...record,
        segments: [
          { start: 0.1234, end: 1.5, speaker: null, text: ' hello there ' },
          { start: 1.6, end: 1.7, speaker: 'x', text: '  ' },
          { start: 1.8, end: 2.9, speaker: ' Dana ', text: 'how are you' },
        ],
      })
      .then([
        {
          type: 'TranscriptRecorded',
          data: {
            source: 'audio',
            text: 'hello there how are you',
            truncated: false,
            durationSeconds: 3,
            engine: 'pocketsphinx',
            segments: [
              { start: 0.123, end: 1.5, speaker: null, text: 'hello there' },
              { start: 1.8, end: 2.9, speaker: 'Dana', text: 'how are you' },
            ],
            at: T1,
          },
        },
      ]);
  });

  test('without segments from the step, the event records those its text holds', () => {
    given(history)
      .when(record)
      .then([
        {
          type: 'TranscriptRecorded',
          data: {
            source: 'audio',
            text: 'hello there how are you',
            truncated: false,
            durationSeconds: 3,
            engine: 'pocketsphinx',
            segments: [{ start: null, end: null, speaker: null, text: 'hello there how are you' }],
            at: T1,
          },
        },
      ]);
  });

  test('a version-1 event (recorded before segments existed, an inline WebVTT transcript) decodes with the segments its text holds', () => {
    const text =
      'WEBVTT\n\n00:00:01.000 --> 00:00:02.500\n<v Rep>Hi Dana.\n\n00:00:03.000 --> 00:00:04.000\n<v Dana>Hi Sam.\n';
    const old = { source: 'inline', text, truncated: false, durationSeconds: 4, engine: null, at: T1 };
    const expected = [
      { start: 1, end: 2.5, speaker: 'Rep', text: 'Hi Dana.' },
      { start: 3, end: 4, speaker: 'Dana', text: 'Hi Sam.' },
    ];
    const decoded = callEvents.decode(stored('TranscriptRecorded', old, 2));
    assert.ok(decoded.type === 'TranscriptRecorded');
    assert.deepEqual(decoded.data.segments, expected);
    const state = given([
      {
        type: 'CallSubmitted',
        data: {
          ...submitted,
          submission: {
            ...submitted.submission,
            audioUrl: undefined,
            transcript: { text, truncated: false, originalBytes: 1 },
          },
        },
      },
      { type: 'ProcessingStarted', data: { mode: 'transcript', deadline: '2026-11-20T11:00:00.000Z', at: T0 } },
      decoded,
    ]).state();
    assert.ok(state.status === 'pending' && state.transcript);
    assert.deepEqual(state.transcript.segments, expected);
    assert.equal(state.stage, 'analysing');
  });

  test(`a version-1 event of more lines than ${SEGMENT_LIMITS.maxSegments} segments decodes with every line: the last segment holds the rest`, () => {
    const lines = Array.from({ length: SEGMENT_LIMITS.maxSegments + 2 }, (_, i) => `${i % 2 ? 'Dana' : 'Rep'}: ${i}`);
    const old = {
      source: 'inline',
      text: lines.join('\n'),
      truncated: false,
      durationSeconds: 4,
      engine: null,
      at: T1,
    };
    const decoded = callEvents.decode(stored('TranscriptRecorded', old, 2));
    assert.ok(decoded.type === 'TranscriptRecorded');
    assert.equal(decoded.data.segments.length, SEGMENT_LIMITS.maxSegments);
    assert.equal(renderText(decoded.data.segments), `${old.text}\n`);
  });

  test(`a version-2 event recorded with its segments cut at ${SEGMENT_LIMITS.maxSegments} still reads, as recorded`, () => {
    const segments = Array.from({ length: SEGMENT_LIMITS.maxSegments }, (_, i) => ({
      start: null,
      end: null,
      speaker: i % 2 ? 'Dana' : 'Rep',
      text: `${i}`,
    }));
    const text = [...segments.map((s) => `${s.speaker}: ${s.text}`), 'Rep: cut'].join('\n');
    const data = { source: 'inline', text, truncated: false, durationSeconds: 4, engine: null, segments, at: T1 };
    const decoded = callEvents.decode(stored('TranscriptRecorded', data, 2, 2));
    assert.ok(decoded.type === 'TranscriptRecorded');
    assert.deepEqual(decoded.data.segments, segments);
    assert.equal(decoded.data.text, text, 'the text is whole, as it always was');
  });

  test('recorded segments are read as recorded, never re-derived from the text', () => {
    const segments = [{ start: 0, end: 9, speaker: 'Speaker 1', text: 'Rep: not a label here' }];
    const data = {
      source: 'audio',
      text: 'Rep: hi\nDana: hello',
      truncated: false,
      durationSeconds: 9,
      engine: 'openai:whisper-1',
      segments,
      at: T1,
    };
    for (const version of [undefined, 2]) {
      const decoded = callEvents.decode(stored('TranscriptRecorded', data, 2, version));
      assert.ok(decoded.type === 'TranscriptRecorded');
      assert.deepEqual(decoded.data.segments, segments);
    }
  });
});
