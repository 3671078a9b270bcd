/**
 * State of the Call aggregate and `evolve`. A union tagged by `status`; a pending call also has a
 * `stage` saying where it is. Everything a step needs to run is in the state, so a processor that
 * restarts resumes from the last event.
 *
 * Which events apply in which status, and the stage they lead to, is decided in one place:
 * `evolveLifecycle`, over the steps a call has been through. The aggregate's `evolveCall` and the
 * call history row (call-history.ts) both fold through it and only add their own data.
 */
import type { Deal } from '../submission/submission.ts';
import type { CallAnalysis, CallEvent, ProcessingMode, TranscriptRecorded } from './call-events.ts';
import type { CallSubmittedData } from './call-submitted.ts';

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
  /** The recorded transcript with its segments (derived from the text for version-1 events: call-catalogue.ts). */
  transcript?: TranscriptRecorded['data'];
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

/** The steps a call has been through: what its stage follows from. */
export interface CallSteps {
  /** Set once processing started. */
  mode?: ProcessingMode;
  audioFetched: boolean;
  transcribed: boolean;
  analysed: boolean;
  dealRecorded: boolean;
  /** The submission carries deal data, so a deal step is due. */
  dealDue: boolean;
}

/** Where a pending call is, from the steps it has been through. */
export const stageOf = (steps: CallSteps): CallStage => {
  if (!steps.mode) return 'queued';
  if (!steps.transcribed) return steps.mode === 'audio' && !steps.audioFetched ? 'fetching_audio' : 'transcribing';
  if (!steps.analysed) return 'analysing';
  if (steps.dealDue && !steps.dealRecorded) return 'recording_deal';
  return 'completing';
};

/** Where a call is in its life: its status, its stage while pending, and the steps behind them. */
export type CallLifecycle =
  | { status: 'absent' }
  | { status: 'erased' }
  | { status: 'pending'; stage: CallStage; steps: CallSteps }
  | { status: 'completed' | 'failed'; steps: CallSteps };

const pendingAt = (steps: CallSteps): CallLifecycle => ({ status: 'pending', stage: stageOf(steps), steps });

/**
 * The one state machine of a call. Returns `lifecycle` itself when the event changes nothing in
 * it: a second CallSubmitted, anything after the erasure, a step result once the call finished (a
 * late result never revives a failed call; only CallRetried does), a retry of a call not failed.
 */
export const evolveLifecycle = (lifecycle: CallLifecycle, event: CallEvent): CallLifecycle => {
  if (lifecycle.status === 'absent') {
    if (event.type !== 'CallSubmitted') return lifecycle;
    const dealDue = event.data.submission.deal !== undefined;
    return pendingAt({ audioFetched: false, transcribed: false, analysed: false, dealRecorded: false, dealDue });
  }
  if (lifecycle.status === 'erased') return lifecycle;
  if (event.type === 'CallErased') return { status: 'erased' };
  const { steps } = lifecycle;
  if (lifecycle.status !== 'pending')
    return lifecycle.status === 'failed' && event.type === 'CallRetried' ? pendingAt(steps) : lifecycle;
  switch (event.type) {
    case 'ProcessingStarted':
      return pendingAt({ ...steps, mode: event.data.mode });
    case 'AudioFetched':
      return pendingAt({ ...steps, audioFetched: true });
    case 'TranscriptRecorded':
      return pendingAt({ ...steps, transcribed: true });
    case 'CallAnalysed':
      return pendingAt({ ...steps, analysed: true });
    case 'DealRecorded':
      return pendingAt({ ...steps, dealRecorded: true });
    case 'CallCompleted':
      return { status: 'completed', steps };
    case 'CallFailed':
      return { status: 'failed', steps };
    case 'CallSubmitted':
    case 'CallRetried':
      return lifecycle;
    default: {
      const unhandled: never = event;
      throw new Error(`unknown call event ${(unhandled as { type: string }).type}`);
    }
  }
};

/** The steps behind a call's state. */
export const stepsOf = (call: CallProgress): CallSteps => ({
  ...(call.mode ? { mode: call.mode } : {}),
  audioFetched: call.audio !== undefined,
  transcribed: call.transcript !== undefined,
  analysed: call.analysis !== undefined,
  dealRecorded: call.dealRecorded !== undefined,
  dealDue: submittedDeal(call) !== undefined,
});

/** The lifecycle of a call's state. */
export const lifecycleOf = (state: CallState): CallLifecycle => {
  switch (state.status) {
    case 'absent':
      return { status: 'absent' };
    case 'erased':
      return { status: 'erased' };
    case 'pending':
      return { status: 'pending', stage: state.stage, steps: stepsOf(state) };
    default:
      return { status: state.status, steps: stepsOf(state) };
  }
};

const facts = (state: PendingCall | CompletedCall | FailedCall): CallProgress => {
  const { callId, submitted, mode, deadline, retriedAt, audio, transcript, analysis, dealRecorded } = state;
  return { callId, submitted, mode, deadline, retriedAt, audio, transcript, analysis, dealRecorded };
};

/** The facts with what `event` records. */
const withFacts = (known: CallProgress, event: CallEvent): CallProgress => {
  switch (event.type) {
    case 'ProcessingStarted':
      return { ...known, mode: event.data.mode, deadline: event.data.deadline };
    case 'AudioFetched':
      return { ...known, audio: { bytes: event.data.bytes, contentType: event.data.contentType } };
    case 'TranscriptRecorded':
      return { ...known, transcript: event.data };
    case 'CallAnalysed': {
      const { at: _at, ...analysis } = event.data;
      return { ...known, analysis };
    }
    case 'DealRecorded':
      return { ...known, dealRecorded: event.data.deal };
    case 'CallRetried':
      // Everything recorded so far stays; the old deadline goes, the clock restarts at the retry.
      return { ...known, deadline: undefined, retriedAt: event.data.at };
    default:
      return known;
  }
};

export const evolveCall = (state: CallState, event: CallEvent): CallState => {
  const before = lifecycleOf(state);
  const after = evolveLifecycle(before, event);
  if (after === before) return state;
  if (event.type === 'CallSubmitted')
    return { callId: event.data.callId, submitted: event.data, status: 'pending', stage: 'queued' };
  if (state.status === 'absent' || state.status === 'erased') return state;
  if (event.type === 'CallErased')
    return { status: 'erased', callId: state.callId, teamId: state.submitted.teamId, erasedAt: event.data.at };
  const known = withFacts(facts(state), event);
  switch (after.status) {
    case 'pending':
      return { ...known, status: 'pending', stage: after.stage };
    case 'completed':
      return event.type === 'CallCompleted'
        ? { ...known, status: 'completed', completedAt: event.data.at, durationSeconds: event.data.durationSeconds }
        : state;
    case 'failed':
      return event.type === 'CallFailed'
        ? { ...known, status: 'failed', failedAt: event.data.at, code: event.data.code, reason: event.data.reason }
        : state;
    default:
      return state;
  }
};
