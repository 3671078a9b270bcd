/**
 * Which failures an operator may retry: those whose cause lies outside the call itself (a host or
 * engine that was down, slow, rate-limited or misconfigured, no engine configured yet, a deadline
 * that passed while the service was busy, an unexpected error). Retrying them can succeed once the
 * cause is gone. The others are facts about the submission (a URL that is invalid or blocked, a
 * recording too large, too long, of the wrong type or undecodable, an empty transcript): the same
 * call would fail the same way, so a retry is refused.
 */

export const RETRIABLE_FAILURE_CODES = [
  // The deadline passed (a backlog, an outage, a slow engine).
  'processing_timeout',
  // The recording's host: down, slow, erroring or not serving the file yet.
  'audio_unreachable',
  'audio_timeout',
  'audio_http_error',
  'audio_not_found',
  // The service's own disk.
  'audio_storage_error',
  // The transcription engine: none configured yet, crashed, slow, refusing the key or the model, rate-limited.
  'transcription_unavailable',
  'transcription_failed',
  'transcription_timeout',
  'transcription_rejected',
  'transcription_rate_limited',
  // The analyser: unreachable, slow, refusing the key or the model, rate-limited, answering nonsense.
  'analysis_unavailable',
  'analysis_timeout',
  'analysis_rejected',
  'analysis_rate_limited',
  'analysis_invalid_response',
  // An unexpected error, logged by the processor.
  'internal_error',
] as const;

export type RetriableFailureCode = (typeof RETRIABLE_FAILURE_CODES)[number];

export const isRetriableFailure = (code: string): code is RetriableFailureCode =>
  (RETRIABLE_FAILURE_CODES as readonly string[]).includes(code);
