import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  callDecider,
  nextStep,
  PROCESSING_TIMEOUT,
  processingMode,
} from '../../../../shared/domain/call/call-decider.ts';
import type { CallAnalysis, CallEvent } from '../../../../shared/domain/call/call-events.ts';
import type { CallSubmittedData } from '../../../../shared/domain/call/call-submitted.ts';
import type { Submission } from '../../../../shared/domain/submission/submission.ts';
import { deciderSpec } from '../../../support/decider-spec.ts';
import { segmentsFromText } from '../../../../shared/domain/transcript/transcript-segments.ts';
import { TRANSCRIPT_MAX_BYTES } from '../../../../shared/domain/submission/truncate-utf8.ts';

const { given } = deciderSpec(callDecider);
const HOUR = 3_600_000;
const T0 = '2026-11-20T10:00:00.000Z';
const T1 = '2026-11-20T10:00:01.000Z';
const T2 = '2026-11-20T10:00:02.000Z';

const submitted = (submission: Partial<Submission> = {}): CallSubmittedData => ({
  callId: 'c1',
  teamId: 't1',
  keyId: 'k1',
  submittedAt: T0,
  submission: {
    aiTitleEnabled: true,
    tags: [],
    metadata: {},
    transcript: { text: 'Rep: hi', truncated: false, originalBytes: 7 },
    ...submission,
  },
  attributedTo: { kind: 'owner', email: 'o@acme.test', name: 'Olive' },
  capacity: { reservedMinutes: 1, autoRechargedMinutes: 0 },
  warnings: [],
});
const analysis: CallAnalysis = {
  title: 'Pricing with Dana',
  summary: 'Talked pricing.',
  score: 71,
  components: [],
  insights: [],
  engine: 'built-in',
};

const callSubmitted = (s = submitted()): CallEvent => ({ type: 'CallSubmitted', data: s });
const started = (mode: 'audio' | 'transcript' = 'transcript'): CallEvent => ({
  type: 'ProcessingStarted',
  data: { mode, deadline: '2026-11-20T11:00:00.000Z', at: T1 },
});
const inlineTranscript: CallEvent = {
  type: 'TranscriptRecorded',
  data: {
    source: 'inline',
    text: 'Rep: hi',
    truncated: false,
    durationSeconds: 60,
    engine: null,
    segments: segmentsFromText('Rep: hi'),
    at: T1,
  },
};
const analysed: CallEvent = { type: 'CallAnalysed', data: { ...analysis, at: T2 } };
const completed: CallEvent = { type: 'CallCompleted', data: { durationSeconds: 60, at: T2 } };
const failed: CallEvent = { type: 'CallFailed', data: { code: 'audio_fetch_blocked', reason: 'blocked', at: T2 } };

describe('Call decider', () => {
  test('a submission starts a pending call at stage queued', () => {
    given([]).when({ type: 'SubmitCall', data: submitted() }).then([callSubmitted()]);
    const state = given([callSubmitted()]).state();
    assert.equal(state.status, 'pending');
    assert.equal(state.status === 'pending' && state.stage, 'queued');
  });

  test('a redelivered submission changes nothing', () => {
    given([callSubmitted()]).when({ type: 'SubmitCall', data: submitted() }).thenNothing();
  });

  test('processing mode: audio only → audio; transcript only → transcript; both → audio is primary', () => {
    assert.equal(processingMode(submitted({ transcript: undefined, audioUrl: 'https://a/x.mp3' })), 'audio');
    assert.equal(processingMode(submitted()), 'transcript');
    assert.equal(processingMode(submitted({ audioUrl: 'https://a/x.mp3' })), 'audio');
  });

  test('start processing records the mode and a deadline one timeout after submission', () => {
    given([callSubmitted()])
      .when({ type: 'StartProcessing', now: T1, timeoutMs: HOUR })
      .then([
        { type: 'ProcessingStarted', data: { mode: 'transcript', deadline: '2026-11-20T11:00:00.000Z', at: T1 } },
      ]);
  });

  test('transcript-only: inline transcript → analysis → completed', () => {
    const transcript = {
      type: 'RecordTranscript',
      source: 'inline',
      text: 'Rep: hi',
      truncated: false,
      durationSeconds: 60,
      engine: null,
      now: T1,
    } as const;
    given([callSubmitted(), started()]).when(transcript).then([inlineTranscript]);
    given([callSubmitted(), started(), inlineTranscript])
      .when({ type: 'RecordAnalysis', analysis, now: T2 })
      .then([analysed]);
    given([callSubmitted(), started(), inlineTranscript, analysed])
      .when({ type: 'CompleteCall', now: T2 })
      .then([completed]);
    assert.equal(
      given([callSubmitted(), started(), inlineTranscript, analysed, completed]).state().status,
      'completed',
    );
  });

  test('audio: fetched → audio transcript (the inline one is not primary)', () => {
    const both = submitted({ audioUrl: 'https://a/x.mp3' });
    const base = [callSubmitted(both), started('audio')];
    assert.equal(nextStep(given(base).state()), 'fetch_and_transcribe');
    given(base)
      .when({ type: 'RecordAudioFetched', bytes: 100, contentType: 'audio/wav', now: T1 })
      .then([{ type: 'AudioFetched', data: { bytes: 100, contentType: 'audio/wav', at: T1 } }]);
    given(base)
      .when({
        type: 'RecordTranscript',
        source: 'inline',
        text: 'x',
        truncated: false,
        durationSeconds: null,
        engine: null,
        now: T1,
      })
      .thenThrows('CALL_STEP_OUT_OF_ORDER');
    given(base)
      .when({
        type: 'RecordTranscript',
        source: 'audio',
        text: 'hello',
        truncated: false,
        durationSeconds: 5,
        engine: 'pocketsphinx',
        now: T1,
      })
      .then([
        {
          type: 'TranscriptRecorded',
          data: {
            source: 'audio',
            text: 'hello',
            truncated: false,
            durationSeconds: 5,
            engine: 'pocketsphinx',
            segments: segmentsFromText('hello'),
            at: T1,
          },
        },
      ]);
  });

  test("an engine's transcript past 500 KB is stored cut to it, on a character boundary, and marked truncated", () => {
    const both = submitted({ audioUrl: 'https://calls.example/a.wav' });
    const text = 'é'.repeat(TRANSCRIPT_MAX_BYTES); // two bytes each: twice the cap
    const [event] = callDecider.decide(
      { type: 'RecordTranscript', source: 'audio', text, truncated: false, durationSeconds: 5, engine: 'e', now: T1 },
      given([callSubmitted(both), started('audio')]).state(),
    );
    const data = (event as Extract<CallEvent, { type: 'TranscriptRecorded' }>).data;
    assert.equal(data.text, 'é'.repeat(TRANSCRIPT_MAX_BYTES / 2));
    assert.equal(data.truncated, true);
  });

  test('a transcript-only call cannot record an audio transcript', () => {
    given([callSubmitted(), started()])
      .when({
        type: 'RecordTranscript',
        source: 'audio',
        text: 'x',
        truncated: false,
        durationSeconds: 1,
        engine: 'e',
        now: T1,
      })
      .thenThrows('CALL_STEP_OUT_OF_ORDER');
  });

  test('deal data: analysed → DealRecorded → completed', () => {
    const withDeal = submitted({ deal: { dealSize: 1200.5 } });
    const base = [callSubmitted(withDeal), started(), inlineTranscript, analysed];
    assert.equal(nextStep(given(base).state()), 'record_deal');
    given(base).when({ type: 'CompleteCall', now: T2 }).thenThrows('CALL_STEP_OUT_OF_ORDER');
    const dealRecorded: CallEvent = { type: 'DealRecorded', data: { deal: { dealSize: 1200.5 }, at: T2 } };
    given(base).when({ type: 'RecordDeal', now: T2 }).then([dealRecorded]);
    given([...base, dealRecorded])
      .when({ type: 'RecordDeal', now: T2 })
      .thenThrows('CALL_STEP_OUT_OF_ORDER');
    given([...base, dealRecorded])
      .when({ type: 'CompleteCall', now: T2 })
      .then([completed]);
  });

  test('a step out of order is refused (analysis before a transcript)', () => {
    given([callSubmitted(), started()])
      .when({ type: 'RecordAnalysis', analysis, now: T1 })
      .thenThrows('CALL_STEP_OUT_OF_ORDER');
    given([callSubmitted()]).when({ type: 'CompleteCall', now: T1 }).thenThrows('CALL_STEP_OUT_OF_ORDER');
  });

  test('a step for a call that does not exist is refused', () => {
    given([]).when({ type: 'StartProcessing', now: T1, timeoutMs: HOUR }).thenThrows('CALL_NOT_FOUND');
  });

  test('a result after CallFailed is rejected', () => {
    const base = [callSubmitted(), started(), inlineTranscript, failed];
    given(base).when({ type: 'RecordAnalysis', analysis, now: T2 }).thenThrows('CALL_ALREADY_FINISHED');
    given(base).when({ type: 'FailCall', code: 'x', reason: 'y', now: T2 }).thenThrows('CALL_ALREADY_FINISHED');
  });

  test('a second CallCompleted is rejected', () => {
    given([callSubmitted(), started(), inlineTranscript, analysed, completed])
      .when({ type: 'CompleteCall', now: T2 })
      .thenThrows('CALL_ALREADY_FINISHED');
  });

  test('a terminal step error fails the pending call with its code and reason', () => {
    given([callSubmitted(), started('audio')])
      .when({ type: 'FailCall', code: 'audio_fetch_blocked', reason: 'blocked', now: T2 })
      .then([failed]);
  });

  test('a call failing before its deal step has its deal written just before CallFailed, once', () => {
    const withDeal = callSubmitted(submitted({ deal: { dealSize: 10, notes: 'n' } }));
    const dealRecorded: CallEvent = { type: 'DealRecorded', data: { deal: { dealSize: 10, notes: 'n' }, at: T2 } };
    given([withDeal, started('audio')])
      .when({ type: 'FailCall', code: 'audio_fetch_blocked', reason: 'blocked', now: T2 })
      .then([dealRecorded, failed]);
    const late = '2026-11-20T11:00:00.000Z';
    given([withDeal, started(), inlineTranscript, analysed])
      .when({ type: 'TimeOut', now: late, timeoutMs: HOUR })
      .then([
        { type: 'DealRecorded', data: { deal: { dealSize: 10, notes: 'n' }, at: late } },
        { type: 'CallFailed', data: { code: PROCESSING_TIMEOUT, reason: PROCESSING_TIMEOUT, at: late } },
      ]);
    // Written once: a call whose deal is already recorded (a retried call's) writes no second one.
    given([withDeal, started('audio'), dealRecorded])
      .when({ type: 'FailCall', code: 'audio_fetch_blocked', reason: 'blocked', now: T2 })
      .then([failed]);
  });

  test('processing timeout: a pending call past its deadline fails with processing_timeout', () => {
    given([callSubmitted(), started()])
      .when({ type: 'TimeOut', now: '2026-11-20T11:00:00.000Z', timeoutMs: HOUR })
      .then([
        {
          type: 'CallFailed',
          data: { code: PROCESSING_TIMEOUT, reason: PROCESSING_TIMEOUT, at: '2026-11-20T11:00:00.000Z' },
        },
      ]);
  });

  test('processing timeout counts from submission even before processing started', () => {
    given([callSubmitted()]).when({ type: 'TimeOut', now: '2026-11-20T10:59:59.999Z', timeoutMs: HOUR }).thenNothing();
    assert.equal(
      given([callSubmitted()]).when({ type: 'TimeOut', now: '2026-11-20T11:00:00.000Z', timeoutMs: HOUR }).stateAfter()
        .status,
      'failed',
    );
  });

  test('a call past its deadline with every step recorded is not failed by the timeout (its capacity may be settled)', () => {
    given([callSubmitted(), started(), inlineTranscript, analysed])
      .when({ type: 'TimeOut', now: '2026-11-21T00:00:00.000Z', timeoutMs: HOUR })
      .thenNothing();
  });

  test('a call with every step recorded is not failed either (its capacity may be settled): it is completed', () => {
    given([callSubmitted(), started(), inlineTranscript, analysed])
      .when({ type: 'FailCall', code: 'internal_error', reason: 'completing failed', now: '2026-11-20T10:30:00.000Z' })
      .thenThrows('CALL_STEP_OUT_OF_ORDER');
  });

  test('a timeout after completion does nothing', () => {
    given([callSubmitted(), started(), inlineTranscript, analysed, completed])
      .when({ type: 'TimeOut', now: '2026-11-21T00:00:00.000Z', timeoutMs: HOUR })
      .thenNothing();
    given([callSubmitted(), failed])
      .when({ type: 'TimeOut', now: '2026-11-21T00:00:00.000Z', timeoutMs: HOUR })
      .thenNothing();
  });

  test('a late result never revives a failed call: the state stays failed', () => {
    const state = given([callSubmitted(), started(), inlineTranscript, failed]).state();
    assert.equal(state.status, 'failed');
    assert.equal(nextStep(state), 'none');
  });

  test('nextStep walks the pipeline', () => {
    assert.equal(nextStep(given([]).state()), 'none');
    assert.equal(nextStep(given([callSubmitted()]).state()), 'start');
    assert.equal(nextStep(given([callSubmitted(), started()]).state()), 'record_inline_transcript');
    assert.equal(nextStep(given([callSubmitted(), started(), inlineTranscript]).state()), 'analyse');
    assert.equal(nextStep(given([callSubmitted(), started(), inlineTranscript, analysed]).state()), 'complete');
  });
});
