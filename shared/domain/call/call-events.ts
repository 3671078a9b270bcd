/**
 * Events of the Call aggregate, stream `call-{callId}`. Times are ISO 8601 instants.
 *
 *   CallSubmitted → ProcessingStarted → [AudioFetched] → TranscriptRecorded → CallAnalysed
 *     → [DealRecorded] → CallCompleted
 *   any pending state → [DealRecorded] → CallFailed (a terminal step error, or the processing
 *     timeout; a deal not yet recorded is written first, in the same append)
 *   CallFailed with a retriable code → CallRetried (an operator's retry) → pending again, from
 *     the last step that succeeded
 *   any state but absent or erased → CallErased (docs/decisions/0014-erasure-crypto-shredding.md):
 *     the end of the stream; nothing is decided after it
 */
import type { Deal } from '../submission/submission.ts';
import type { TranscriptSegment } from '../transcript/transcript-segments.ts';
import type { CallStage } from './call-state.ts';
import type { CallSubmitted } from './call-submitted.ts';

export type ProcessingMode = 'audio' | 'transcript';

export interface ScoreComponent {
  name: string;
  /** The raw measure, e.g. 0.62 for a talk ratio or 7 questions. */
  value: number;
  /** 0–100. */
  score: number;
  weight: number;
  explanation: string;
}

export interface Insight {
  kind: 'strength' | 'improvement';
  /** Stable, e.g. `talk_ratio_high`. */
  code: string;
  message: string;
  /** The transcript line the insight is based on. */
  evidence: string;
}

export interface CallAnalysis {
  /** The AI title (title rule 1). */
  title: string;
  summary: string;
  /** 0–100. */
  score: number;
  components: ScoreComponent[];
  insights: Insight[];
  engine: string;
}

export type ProcessingStarted = {
  type: 'ProcessingStarted';
  data: { mode: ProcessingMode; deadline: string; at: string };
};
export type AudioFetched = {
  type: 'AudioFetched';
  data: { bytes: number; contentType: string; at: string };
};
export type TranscriptRecorded = {
  type: 'TranscriptRecorded';
  data: {
    source: 'audio' | 'inline';
    text: string;
    truncated: boolean;
    /** Real audio length for `audio`; for `inline`, the normalised duration or a transcript-length estimate. */
    durationSeconds: number | null;
    engine: string | null;
    /**
     * Who said what, and when: the engine's timed segments, or those the inline text holds
     * (WebVTT/SRT cues, `Speaker:` lines). Events recorded before segments existed (version 1)
     * get those of their text when decoded (call-catalogue.ts).
     */
    segments: TranscriptSegment[];
    at: string;
  };
};
export type CallAnalysed = { type: 'CallAnalysed'; data: CallAnalysis & { at: string } };
export type DealRecorded = { type: 'DealRecorded'; data: { deal: Deal; at: string } };
export type CallCompleted = { type: 'CallCompleted'; data: { durationSeconds: number | null; at: string } };
export type CallFailed = {
  type: 'CallFailed';
  data: {
    /** Stable code, shown as the call's `processingError`, e.g. `processing_timeout`, `audio_fetch_blocked`. */
    code: string;
    /** For a person, shown as the call's `statusReason`. */
    reason: string;
    at: string;
  };
};

/**
 * An operator retried a failed call whose failure may not happen again (see
 * retriable-failures.ts). The call is pending again from its last good step (`resumesAt`), with
 * capacity reserved anew and a fresh processing deadline: `at` + PROCESSING_TIMEOUT_MS.
 */
export type CallRetried = {
  type: 'CallRetried';
  data: {
    /** The failure the retry answers. */
    previousFailure: CallFailed['data'];
    /** The stage processing resumes at: nothing that succeeded is done again. */
    resumesAt: CallStage;
    /** Capacity reserved for the retry, as at submission. */
    capacity: { reservedMinutes: number; autoRechargedMinutes: number };
    at: string;
  };
};

/**
 * The call was erased: its data key is destroyed, so the personal fields of every event before this
 * one (and of every topic record) can no longer be read, and the read models drop the call. Carries
 * no personal data. Legal in any state; a pending call stops, late step results are refused.
 */
export type CallErased = {
  type: 'CallErased';
  data: {
    /** Why: the team's `DELETE /api/calls/:callId`, the team's retention period, or an erasure request by e-mail. */
    cause: ErasureCause;
    /** The erasure request that erased the call (cause `erasure_request`). */
    erasureId?: string;
    at: string;
  };
};

export const ERASURE_CAUSES = ['deleted', 'retention', 'erasure_request'] as const;
export type ErasureCause = (typeof ERASURE_CAUSES)[number];

export type CallEvent =
  | CallSubmitted
  | ProcessingStarted
  | AudioFetched
  | TranscriptRecorded
  | CallAnalysed
  | DealRecorded
  | CallCompleted
  | CallFailed
  | CallRetried
  | CallErased;
export type CallEventType = CallEvent['type'];
