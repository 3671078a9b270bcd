/**
 * The one error a processing step (audio fetch, transcription, analysis, deal write) raises.
 * `code` is stable and becomes the call's `processingError`; `message` is for a person and becomes
 * its `statusReason` when the call fails. `retriable` decides between a retry with backoff and
 * ending the call as failed.
 */
export class StepError extends Error {
  constructor(
    /** Stable snake_case code, e.g. `audio_fetch_blocked`, `transcription_unavailable`. */
    readonly code: string,
    message: string,
    /** True when the same step may succeed later (network trouble, a 5xx, a rate limit). */
    readonly retriable: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'StepError';
  }
}

export const isStepError = (error: unknown): error is StepError => error instanceof StepError;
