/**
 * State of the Call aggregate and `evolve`. A union tagged by `status`; a pending call also has a
 * `stage` saying where it is. Everything a step needs to run is in the state, so a processor that
 * restarts resumes from the last event.
 */
import type { Deal } from '../submission/submission.ts';
import type { CallAnalysis, CallEvent, ProcessingMode } from './call-events.ts';
import type { CallSubmittedData } from './call-submitted.ts';
import { type RecordedTranscript, withSegments } from './transcript-recorded.ts';

export type CallStage = 'queued' | 'fetching_audio' | 'transcribing' | 'analysing' | 'recording_deal' | 'completing';

/** What every call that exists holds: its submission and what has happened to it so far. */
interface CallProgress {
  callId: string;
  submitted: CallSubmittedData;
  mode?: ProcessingMode;
  /** ISO instant after which a pending call fails with `processing_timeout`. */
  deadline?: string;
  /** When an operator last retried the call: its processing clock restarted then. */
  retriedAt?: string;
  audio?: { bytes: number; contentType: string };
  /** The recorded transcript, its segments always there (derived from the text for older events). */
  transcript?: RecordedTranscript;
  analysis?: CallAnalysis;
  /** The deal written for this call, once DealRecorded. */
  dealRecorded?: Deal;
}

export type PendingCall = CallProgress & { status: 'pending'; stage: CallStage };
export type CompletedCall = CallProgress & { status: 'completed'; completedAt: string; durationSeconds: number | null };
export type FailedCall = CallProgress & { status: 'failed'; failedAt: string; code: string; reason: string };

/**
 * An erased call keeps nothing but who it was and when it went: none of its facts (they hold
 * personal data), so no state cached in memory outlives the erasure with them.
 */
export type ErasedCall = { status: 'erased'; callId: string; teamId: string; erasedAt: string };

export type CallState = { status: 'absent' } | PendingCall | CompletedCall | FailedCall | ErasedCall;

export const initialCallState: CallState = { status: 'absent' };

/** The deal data the submission carries, when it has any. */
export const submittedDeal = (state: CallProgress): Deal | undefined => state.submitted.submission.deal;

/** Where a pending call is, derived from what has happened so far. */
export const stageOf = (call: CallProgress): CallStage => {
  if (!call.mode) return 'queued';
  if (!call.transcript) return call.mode === 'audio' && !call.audio ? 'fetching_audio' : 'transcribing';
  if (!call.analysis) return 'analysing';
  if (submittedDeal(call) && !call.dealRecorded) return 'recording_deal';
  return 'completing';
};

const pending = (facts: CallProgress): PendingCall => ({ ...facts, status: 'pending', stage: stageOf(facts) });

const facts = (state: PendingCall | CompletedCall | FailedCall): CallProgress => {
  const { callId, submitted, mode, deadline, retriedAt, audio, transcript, analysis, dealRecorded } = state;
  return { callId, submitted, mode, deadline, retriedAt, audio, transcript, analysis, dealRecorded };
};

export const evolveCall = (state: CallState, event: CallEvent): CallState => {
  if (event.type === 'CallSubmitted') {
    return state.status === 'absent' ? pending({ callId: event.data.callId, submitted: event.data }) : state;
  }
  if (state.status === 'absent' || state.status === 'erased') return state;
  if (event.type === 'CallErased')
    return { status: 'erased', callId: state.callId, teamId: state.submitted.teamId, erasedAt: event.data.at };
  const known = facts(state);
  switch (event.type) {
    case 'ProcessingStarted':
      return pending({ ...known, mode: event.data.mode, deadline: event.data.deadline });
    case 'AudioFetched':
      return pending({ ...known, audio: { bytes: event.data.bytes, contentType: event.data.contentType } });
    case 'TranscriptRecorded':
      return pending({ ...known, transcript: withSegments(event.data) });
    case 'CallAnalysed': {
      const { at: _at, ...analysis } = event.data;
      return pending({ ...known, analysis });
    }
    case 'DealRecorded':
      return pending({ ...known, dealRecorded: event.data.deal });
    case 'CallCompleted':
      return { ...known, status: 'completed', completedAt: event.data.at, durationSeconds: event.data.durationSeconds };
    case 'CallFailed':
      return { ...known, status: 'failed', failedAt: event.data.at, code: event.data.code, reason: event.data.reason };
    case 'CallRetried':
      // Everything recorded so far stays; the old deadline goes, the clock restarts at the retry.
      return state.status === 'failed' ? pending({ ...known, deadline: undefined, retriedAt: event.data.at }) : state;
    default: {
      const unhandled: never = event;
      throw new Error(`unknown call event ${(unhandled as { type: string }).type}`);
    }
  }
};
