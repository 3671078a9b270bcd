/**
 * The Call aggregate as a decider: every step of processing is a command that is legal only at its
 * stage, so a redelivered or late step is refused instead of applied twice, and nothing revives a
 * finished call, except an operator's retry of a failure that may not happen again. Processing mode (spec): audio only → fetch, transcribe, analyse; transcript only →
 * transcript-only analysis; both → the audio's transcript is the primary one.
 */
import { DomainError, type Decider } from '../decider.ts';
import type { CallAnalysis, CallEvent, ErasureCause, ProcessingMode } from './call-events.ts';
import type { CallSubmittedData } from './call-submitted.ts';
import {
  type CallState,
  evolveCall,
  initialCallState,
  type PendingCall,
  stageOf,
  stepsOf,
  submittedDeal,
} from './call-state.ts';
import { isRetriableFailure, RETRIABLE_FAILURE_CODES } from './retriable-failures.ts';
import { boundSegments, segmentsFromText, type TranscriptSegment } from '../transcript/transcript-segments.ts';
import { TRANSCRIPT_MAX_BYTES, truncateUtf8 } from '../submission/truncate-utf8.ts';

export type CallCommand =
  | { type: 'SubmitCall'; data: CallSubmittedData }
  | { type: 'StartProcessing'; now: string; timeoutMs: number }
  | { type: 'RecordAudioFetched'; bytes: number; contentType: string; now: string }
  /** `segments` are stored within `SEGMENT_LIMITS` (transcript-segments.ts). */
  | {
      type: 'RecordTranscript';
      source: 'audio' | 'inline';
      text: string;
      truncated: boolean;
      durationSeconds: number | null;
      engine: string | null;
      segments?: TranscriptSegment[];
      now: string;
    }
  | { type: 'RecordAnalysis'; analysis: CallAnalysis; now: string }
  | { type: 'RecordDeal'; now: string }
  | { type: 'CompleteCall'; now: string }
  | { type: 'FailCall'; code: string; reason: string; now: string }
  | { type: 'TimeOut'; now: string; timeoutMs: number }
  /** An operator's retry of a failed call; `capacity` is what was reserved for it again. */
  | { type: 'RetryCall'; now: string; capacity: { reservedMinutes: number; autoRechargedMinutes: number } }
  /** Erases the call (docs/decisions/0014-erasure-crypto-shredding.md): legal in any state but absent or erased. */
  | { type: 'EraseCall'; cause: ErasureCause; erasureId?: string; now: string };

export const CALL_ERROR_CODES = [
  'CALL_NOT_FOUND',
  'CALL_ALREADY_FINISHED',
  'CALL_STEP_OUT_OF_ORDER',
  'CALL_NOT_RETRIABLE',
  'CALL_ERASED',
] as const;
export type CallErrorCode = (typeof CALL_ERROR_CODES)[number];

/** The reason (and code) of a call that stayed pending past its deadline (docs/decisions/0004-call-status-and-timeout.md). */
export const PROCESSING_TIMEOUT = 'processing_timeout';

const refuse = (code: CallErrorCode, message: string): never => {
  throw new DomainError(code, message);
};

/** Audio when there is a recording link (even with a transcript), else the inline transcript. */
export const processingMode = (submitted: CallSubmittedData): ProcessingMode =>
  submitted.submission.audioUrl ? 'audio' : 'transcript';

/** The instant processing times out: the recorded deadline, else when the clock started + timeout. */
export const deadlineAt = (recorded: string | undefined, clockStartedAt: string, timeoutMs: number): string =>
  recorded ?? new Date(Date.parse(clockStartedAt) + timeoutMs).toISOString();

/** The instant a pending call times out: its recorded deadline, else submission (or last retry) time + timeout. */
export const deadlineOf = (call: PendingCall, timeoutMs: number): string =>
  deadlineAt(call.deadline, call.retriedAt ?? call.submitted.submittedAt, timeoutMs);

/**
 * The deal of a call that fails before its deal step: written all the same, just before CallFailed
 * (docs/decisions/0008-deal-fields.md). The deal was valid when the call was accepted and does not
 * depend on the recording or the analysis; a failed call's deal is not lost with them.
 */
const dealBeforeFailing = (call: PendingCall, now: string): CallEvent[] => {
  const deal = submittedDeal(call);
  return deal !== undefined && call.dealRecorded === undefined
    ? [{ type: 'DealRecorded', data: { deal, at: now } }]
    : [];
};

const pendingCall = (state: CallState, step: string): PendingCall => {
  if (state.status === 'absent') return refuse('CALL_NOT_FOUND', `${step}: the call does not exist`);
  if (state.status === 'erased') return refuse('CALL_ERASED', `${step}: the call was erased`);
  if (state.status !== 'pending')
    return refuse(
      'CALL_ALREADY_FINISHED',
      `${step}: the call already ${state.status === 'completed' ? 'completed' : 'failed'}`,
    );
  return state;
};

const atStage = (state: CallState, step: string, ...stages: PendingCall['stage'][]): PendingCall => {
  const call = pendingCall(state, step);
  if (!stages.includes(call.stage)) refuse('CALL_STEP_OUT_OF_ORDER', `${step}: the call is at stage ${call.stage}`);
  return call;
};

export const decideCall = (command: CallCommand, state: CallState): CallEvent[] => {
  switch (command.type) {
    case 'SubmitCall':
      // A redelivered submission of a call already in the store changes nothing.
      return state.status === 'absent' ? [{ type: 'CallSubmitted', data: command.data }] : [];
    case 'StartProcessing': {
      const call = atStage(state, 'start processing', 'queued');
      return [
        {
          type: 'ProcessingStarted',
          data: {
            mode: processingMode(call.submitted),
            deadline: deadlineOf(call, command.timeoutMs),
            at: command.now,
          },
        },
      ];
    }
    case 'RecordAudioFetched':
      atStage(state, 'record fetched audio', 'fetching_audio');
      return [
        { type: 'AudioFetched', data: { bytes: command.bytes, contentType: command.contentType, at: command.now } },
      ];
    case 'RecordTranscript': {
      const call = atStage(state, 'record transcript', 'fetching_audio', 'transcribing');
      if (command.source === 'inline' && call.mode === 'audio')
        refuse('CALL_STEP_OUT_OF_ORDER', 'record transcript: an audio call takes its transcript from the audio');
      if (command.source === 'audio' && call.mode !== 'audio')
        refuse('CALL_STEP_OUT_OF_ORDER', 'record transcript: the call has no audio');
      const { source, durationSeconds, engine, segments, now } = command;
      // A transcript is stored at most 500 KB, the inline transcript's own cap, whatever an engine
      // answered: a larger record would not fit the topics that carry the call's events.
      const capped = truncateUtf8(command.text, TRANSCRIPT_MAX_BYTES);
      const text = capped.text;
      return [
        {
          type: 'TranscriptRecorded',
          data: {
            source,
            text,
            truncated: command.truncated || capped.truncated,
            durationSeconds,
            engine,
            segments: segments ? boundSegments(segments) : segmentsFromText(text),
            at: now,
          },
        },
      ];
    }
    case 'RecordAnalysis':
      atStage(state, 'record analysis', 'analysing');
      return [{ type: 'CallAnalysed', data: { ...command.analysis, at: command.now } }];
    case 'RecordDeal': {
      const call = atStage(state, 'record deal', 'recording_deal');
      return [{ type: 'DealRecorded', data: { deal: submittedDeal(call)!, at: command.now } }];
    }
    case 'CompleteCall': {
      const call = atStage(state, 'complete', 'completing');
      return [
        { type: 'CallCompleted', data: { durationSeconds: call.transcript?.durationSeconds ?? null, at: command.now } },
      ];
    }
    case 'FailCall': {
      // Every step recorded: the capacity may be settled already (settling comes before
      // CallCompleted), and a failed call would stay charged. It is completed, never failed (as a
      // timeout does not fail it either).
      const call = pendingCall(state, 'fail');
      if (call.stage === 'completing') refuse('CALL_STEP_OUT_OF_ORDER', 'fail: the call is at stage completing');
      return [
        ...dealBeforeFailing(call, command.now),
        { type: 'CallFailed', data: { code: command.code, reason: command.reason, at: command.now } },
      ];
    }
    case 'TimeOut': {
      // A timeout after the call finished does nothing: timers are at-least-once too.
      if (state.status !== 'pending') return [];
      if (Date.parse(command.now) < Date.parse(deadlineOf(state, command.timeoutMs))) return [];
      // Every step is recorded: its actor may have settled the capacity already (settling comes
      // before CallCompleted), and failing the call would leave it charged. The timer completes it.
      if (state.stage === 'completing') return [];
      return [
        ...dealBeforeFailing(state, command.now),
        { type: 'CallFailed', data: { code: PROCESSING_TIMEOUT, reason: PROCESSING_TIMEOUT, at: command.now } },
      ];
    }
    case 'RetryCall':
      return retry(command, state);
    case 'EraseCall':
      if (state.status === 'absent') return refuse('CALL_NOT_FOUND', 'The call does not exist.');
      if (state.status === 'erased') return refuse('CALL_ERASED', 'The call was already erased.');
      return [
        {
          type: 'CallErased',
          data: {
            cause: command.cause,
            ...(command.erasureId ? { erasureId: command.erasureId } : {}),
            at: command.now,
          },
        },
      ];
    default: {
      const unhandled: never = command;
      throw new Error(`unknown call command ${(unhandled as { type: string }).type}`);
    }
  }
};

const retry = (command: Extract<CallCommand, { type: 'RetryCall' }>, state: CallState): CallEvent[] => {
  if (state.status === 'absent' || state.status === 'erased')
    return refuse('CALL_NOT_FOUND', 'The call does not exist.');
  if (state.status !== 'failed') {
    const where = state.status === 'pending' ? `pending (stage ${state.stage})` : 'completed';
    return refuse('CALL_NOT_RETRIABLE', `The call is ${where}; only a failed call can be retried.`);
  }
  if (!isRetriableFailure(state.code)) {
    return refuse(
      'CALL_NOT_RETRIABLE',
      `The call failed with ${state.code}, which trying again cannot change. Retriable failures: ${RETRIABLE_FAILURE_CODES.join(', ')}.`,
    );
  }
  const previousFailure = { code: state.code, reason: state.reason, at: state.failedAt };
  return [
    {
      type: 'CallRetried',
      data: { previousFailure, resumesAt: stageOf(stepsOf(state)), capacity: command.capacity, at: command.now },
    },
  ];
};

export const callDecider: Decider<CallCommand, CallState, CallEvent> = {
  decide: decideCall,
  evolve: evolveCall,
  initialState: initialCallState,
};

/** What the processor does next for a call in this state. */
export type NextStep =
  'start' | 'fetch_and_transcribe' | 'record_inline_transcript' | 'analyse' | 'record_deal' | 'complete' | 'none';

export const nextStep = (state: CallState): NextStep => {
  if (state.status !== 'pending') return 'none';
  switch (state.stage) {
    case 'queued':
      return 'start';
    case 'fetching_audio':
    case 'transcribing':
      return state.mode === 'audio' ? 'fetch_and_transcribe' : 'record_inline_transcript';
    case 'analysing':
      return 'analyse';
    case 'recording_deal':
      return 'record_deal';
    case 'completing':
      return 'complete';
  }
};
