/**
 * An operator's retry of a failed call: legal only for a failed call whose failure trying again
 * can change, it resumes from the last step that succeeded with a fresh deadline, and the history
 * row shows the call pending again.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { callDecider, deadlineOf, nextStep } from '../../../../shared/domain/call/call-decider.ts';
import type { CallEvent } from '../../../../shared/domain/call/call-events.ts';
import { type CallHistoryRow, evolveHistoryRow } from '../../../../shared/domain/call/call-history.ts';
import type { CallSubmittedData } from '../../../../shared/domain/call/call-submitted.ts';
import { isRetriableFailure, RETRIABLE_FAILURE_CODES } from '../../../../shared/domain/call/retriable-failures.ts';
import type { Submission } from '../../../../shared/domain/submission/submission.ts';
import { recordedCallEvents } from '../../../support/recorded-events.ts';
import { deciderSpec } from '../../../support/decider-spec.ts';
import { segmentsFromText } from '../../../../shared/domain/transcript/transcript-segments.ts';

const { given } = deciderSpec(callDecider);
const HOUR = 3_600_000;
const T0 = '2026-11-20T10:00:00.000Z';
const at = (s: number) => new Date(Date.parse(T0) + s * 1000).toISOString();
const RETRY_AT = '2026-11-21T09:00:00.000Z';
const capacity = { reservedMinutes: 30, autoRechargedMinutes: 0 };
const retry = { type: 'RetryCall', now: RETRY_AT, capacity } as const;

const submitted = (submission: Partial<Submission> = {}): CallSubmittedData => ({
  callId: 'c1',
  teamId: 't1',
  keyId: 'k1',
  submittedAt: T0,
  submission: { aiTitleEnabled: true, tags: [], metadata: {}, ...submission },
  attributedTo: { kind: 'owner', email: 'o@acme.test', name: 'Olive' },
  capacity,
  warnings: [],
});
const audioCall = submitted({ audioUrl: 'https://rec.example/a.wav' });
const e = {
  submitted: (data = audioCall): CallEvent => ({ type: 'CallSubmitted', data }),
  started: (mode: 'audio' | 'transcript' = 'audio'): CallEvent => ({
    type: 'ProcessingStarted',
    data: { mode, deadline: at(3600), at: at(1) },
  }),
  fetched: (): CallEvent => ({ type: 'AudioFetched', data: { bytes: 10, contentType: 'audio/wav', at: at(2) } }),
  transcript: (): CallEvent => ({
    type: 'TranscriptRecorded',
    data: {
      source: 'audio',
      text: 'Rep: hi',
      truncated: false,
      durationSeconds: 61,
      engine: 'local',
      segments: segmentsFromText('Rep: hi'),
      at: at(3),
    },
  }),
  analysed: (): CallEvent => ({
    type: 'CallAnalysed',
    data: { title: 'Hi', summary: 's', score: 50, components: [], insights: [], engine: 'built-in', at: at(4) },
  }),
  completed: (): CallEvent => ({ type: 'CallCompleted', data: { durationSeconds: 61, at: at(5) } }),
  failed: (code: string, reason = `failed: ${code}`): CallEvent => ({
    type: 'CallFailed',
    data: { code, reason, at: at(6) },
  }),
};

describe('Call decider: an operator retries a failed call', () => {
  test('audio_unreachable: CallRetried, resuming at the audio fetch with capacity reserved again', () => {
    given([e.submitted(), e.started(), e.failed('audio_unreachable', 'The audio host could not be reached.')])
      .when(retry)
      .then([
        {
          type: 'CallRetried',
          data: {
            previousFailure: { code: 'audio_unreachable', reason: 'The audio host could not be reached.', at: at(6) },
            resumesAt: 'fetching_audio',
            capacity,
            at: RETRY_AT,
          },
        },
      ]);
  });

  test('the retried call is pending again, keeps every step that succeeded and runs the first one that did not', () => {
    const afterAnalysisFailed = given([
      e.submitted(),
      e.started(),
      e.fetched(),
      e.transcript(),
      e.failed('analysis_rejected'),
    ])
      .when(retry)
      .stateAfter();
    assert.equal(afterAnalysisFailed.status, 'pending');
    assert.equal(afterAnalysisFailed.status === 'pending' && afterAnalysisFailed.stage, 'analysing');
    assert.equal(nextStep(afterAnalysisFailed), 'analyse', 'the transcript is kept: no new download or transcription');
    assert.equal(afterAnalysisFailed.status === 'pending' && afterAnalysisFailed.transcript?.text, 'Rep: hi');

    const afterTranscriptionFailed = given([
      e.submitted(),
      e.started(),
      e.fetched(),
      e.failed('transcription_unavailable'),
    ])
      .when(retry)
      .stateAfter();
    assert.equal(nextStep(afterTranscriptionFailed), 'fetch_and_transcribe');
    assert.equal(afterTranscriptionFailed.status === 'pending' && afterTranscriptionFailed.stage, 'transcribing');

    const timedOutWhileQueued = given([e.submitted(), e.failed('processing_timeout')])
      .when(retry)
      .stateAfter();
    assert.equal(nextStep(timedOutWhileQueued), 'start');
  });

  test('a fresh deadline: the retry time + the processing timeout, not the one recorded at the first start', () => {
    const state = given([e.submitted(), e.started(), e.failed('processing_timeout')])
      .when(retry)
      .stateAfter();
    assert.equal(state.status, 'pending');
    if (state.status !== 'pending') return;
    assert.equal(deadlineOf(state, HOUR), '2026-11-21T10:00:00.000Z');
    // A call that timed out before it started gets its deadline at start, from the retry time too.
    const queued = given([e.submitted(), e.failed('processing_timeout')])
      .when(retry)
      .stateAfter();
    const restarted = callDecider.decide(
      { type: 'StartProcessing', now: '2026-11-21T09:00:05.000Z', timeoutMs: HOUR },
      queued,
    );
    assert.equal(restarted[0]?.type === 'ProcessingStarted' && restarted[0].data.deadline, '2026-11-21T10:00:00.000Z');
    // And a timeout before the fresh deadline does nothing.
    given([
      e.submitted(),
      e.started(),
      e.failed('processing_timeout'),
      {
        type: 'CallRetried',
        data: {
          previousFailure: { code: 'processing_timeout', reason: 'processing_timeout', at: at(6) },
          resumesAt: 'fetching_audio',
          capacity,
          at: RETRY_AT,
        },
      },
    ])
      .when({ type: 'TimeOut', now: '2026-11-21T09:59:59.000Z', timeoutMs: HOUR })
      .thenNothing();
  });

  test('every retriable code is accepted', () => {
    for (const code of RETRIABLE_FAILURE_CODES) {
      const [event] = callDecider.decide(retry, given([e.submitted(), e.started(), e.failed(code)]).state());
      assert.equal(event?.type, 'CallRetried', code);
    }
  });

  test('409-worthy: a failure trying again cannot change is refused, naming the code', () => {
    for (const code of [
      'audio_url_invalid',
      'audio_fetch_blocked',
      'audio_too_large',
      'audio_unsupported_type',
      'audio_too_many_redirects',
      'audio_undecodable',
      'audio_too_long',
      'transcript_empty',
      'transcript_missing',
    ]) {
      assert.equal(isRetriableFailure(code), false, code);
      const refused = given([e.submitted(), e.started(), e.failed(code)])
        .when(retry)
        .thenThrows('CALL_NOT_RETRIABLE');
      assert.match(refused.message, new RegExp(`failed with ${code}`));
    }
  });

  test('a completed call, a pending call and a call retried already are refused, naming the status', () => {
    assert.match(
      given([e.submitted(), e.started(), e.fetched(), e.transcript(), e.analysed(), e.completed()])
        .when(retry)
        .thenThrows('CALL_NOT_RETRIABLE').message,
      /is completed/,
    );
    assert.match(
      given([e.submitted(), e.started()]).when(retry).thenThrows('CALL_NOT_RETRIABLE').message,
      /is pending \(stage fetching_audio\)/,
    );
    const retriedOnce = callDecider.decide(
      retry,
      given([e.submitted(), e.started(), e.failed('audio_timeout')]).state(),
    );
    assert.match(
      given([e.submitted(), e.started(), e.failed('audio_timeout'), ...retriedOnce])
        .when(retry)
        .thenThrows('CALL_NOT_RETRIABLE').message,
      /is pending \(stage fetching_audio\)/,
    );
  });

  test('an unknown call is CALL_NOT_FOUND', () => {
    given([]).when(retry).thenThrows('CALL_NOT_FOUND');
  });

  test('a retried call that fails again can be retried again; one that completes cannot', () => {
    const retried: CallEvent = {
      type: 'CallRetried',
      data: {
        previousFailure: { code: 'analysis_timeout', reason: 'slow', at: at(6) },
        resumesAt: 'analysing',
        capacity,
        at: RETRY_AT,
      },
    };
    const history = [
      e.submitted(),
      e.started(),
      e.fetched(),
      e.transcript(),
      e.failed('analysis_timeout', 'slow'),
      retried,
    ];
    const again = given([...history, e.failed('analysis_timeout', 'slow again')])
      .when({ ...retry, now: '2026-11-22T00:00:00.000Z' })
      .stateAfter();
    assert.equal(again.status === 'pending' && again.stage, 'analysing');
    given([...history, e.analysed(), e.completed()])
      .when(retry)
      .thenThrows('CALL_NOT_RETRIABLE');
  });
});

const recorded = (events: CallEvent[]) => recordedCallEvents(events);
const project = (events: CallEvent[]) =>
  recorded(events).reduce<CallHistoryRow | undefined>(evolveHistoryRow, undefined)!;

describe('call history of a retried call', () => {
  test('failed, then pending again at the stage it resumes at without its error, then completed', () => {
    const failed = [
      e.submitted(submitted({ transcript: { text: 'Rep: hi', truncated: false, originalBytes: 7 } })),
      e.started('transcript'),
      e.transcript(),
      e.failed('analysis_rejected', 'The analyser refused the request.'),
    ];
    assert.equal(project(failed).status, 'failed');
    assert.equal(project(failed).processingError, 'analysis_rejected');
    const retried: CallEvent = {
      type: 'CallRetried',
      data: {
        previousFailure: { code: 'analysis_rejected', reason: 'x', at: at(6) },
        resumesAt: 'analysing',
        capacity,
        at: RETRY_AT,
      },
    };
    const pending = project([...failed, retried]);
    assert.deepEqual(
      [pending.status, pending.stage, pending.statusReason, pending.processingError, pending.updatedAt],
      ['pending', 'analysing', 'analysing', null, RETRY_AT],
    );
    assert.equal(pending.transcript?.text, 'Rep: hi', 'what was recorded stays');
    const done = project([...failed, retried, e.analysed(), e.completed()]);
    assert.deepEqual(
      [done.status, done.stage, done.statusReason, done.processingError, done.score],
      ['completed', null, 'completed', null, 50],
    );
  });

  test('a late step after the failure still changes nothing (only CallRetried revives a failed row)', () => {
    const failed = [e.submitted(), e.started(), e.failed('audio_unreachable')];
    assert.deepEqual(project([...failed, e.fetched()]), project(failed));
  });
});
