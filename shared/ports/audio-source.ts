/**
 * Audio source port: downloads the recording behind a call's `audioUrl` into a local temp file so the
 * transcription step can read it. The URL comes from an integrator, so an adapter must treat it as
 * hostile (server-side request forgery): it refuses addresses that are not on the public internet,
 * caps the size, bounds the time and checks the content type.
 *
 * Every failure is a `StepError` whose `code` is one of `AUDIO_FETCH_ERROR_CODES`:
 *
 * | code                        | retriable            | when                                                       |
 * |-----------------------------|----------------------|------------------------------------------------------------|
 * | `audio_url_invalid`         | no                   | not a URL, not http(s), user/password in the URL (also on a redirect), a redirect from https to http |
 * | `audio_fetch_blocked`       | no                   | the host is an IP literal of a non-public address, or the URL's port is not an allowed one |
 * | `audio_too_large`           | no                   | Content-Length or the streamed bytes exceed the size cap   |
 * | `audio_unsupported_type`    | no                   | Content-Type is not audio/*, video/* or application/octet-stream; the message names it |
 * | `audio_not_found`           | no                   | 404 or 410                                                 |
 * | `audio_http_error`          | 5xx, 408, 429: yes; other statuses: no | any other non-2xx answer                 |
 * | `audio_unreachable`         | yes                  | DNS failure, a name that resolves to a non-public address, connection refused or reset, TLS failure |
 * | `audio_timeout`             | yes                  | the overall deadline (all redirects and the body) passed   |
 * | `audio_too_many_redirects`  | no                   | more redirects than allowed                                 |
 * | `audio_storage_error`       | yes                  | the local temp file could not be written (disk full, …)    |
 *
 * Messages become the call's `statusReason`, which the integrator reads: a blocked address and an
 * unreachable host get one and the same text (naming the host as given, never what it resolved to
 * or how the connection failed), and a name refused for what it resolves to is an unreachable host
 * (code and retries too), so the service is neither a view of its own name resolution nor a port
 * scanner of the internet. The details go to the error's `cause`, for the logs.
 */
import type { StepError } from './step-error.ts';

/** The stable `StepError.code`s `AudioSource.fetch` raises; see the table above. */
export const AUDIO_FETCH_ERROR_CODES = [
  'audio_url_invalid',
  'audio_fetch_blocked',
  'audio_too_large',
  'audio_unsupported_type',
  'audio_not_found',
  'audio_http_error',
  'audio_unreachable',
  'audio_timeout',
  'audio_too_many_redirects',
  'audio_storage_error',
] as const;

/** One of `AUDIO_FETCH_ERROR_CODES`. */
export type AudioFetchErrorCode = (typeof AUDIO_FETCH_ERROR_CODES)[number];

/** A `StepError` raised by `AudioSource.fetch`. */
export type AudioFetchError = StepError & { readonly code: AudioFetchErrorCode };

/** A downloaded recording, held in a temp file until `cleanup` is called. */
export interface FetchedAudio {
  /** Absolute path of the temp file holding exactly the downloaded bytes. */
  path: string;
  /** Number of bytes in the file. */
  bytes: number;
  /** Media type of the response, lower-cased, without parameters (`audio/mpeg`). */
  contentType: string;
  /** The URL the bytes came from, after redirects. */
  finalUrl: string;
  /** Deletes the temp file. Idempotent; the caller must call it once done with the file. */
  cleanup(): Promise<void>;
}

export interface AudioSource {
  /**
   * Downloads `url` into a temp file. On failure no temp file is left behind.
   * @param options.signal Cancels the download (e.g. on shutdown); the promise then rejects with the
   *   signal's `reason` (an `AbortError` by default), not with a `StepError`, since the audio is not
   *   at fault.
   * @param options.timeoutMs Deadline of this fetch when shorter than the adapter's own (what is
   *   left of the call's fetch budget); past it `audio_timeout`.
   * @throws StepError with a code of `AUDIO_FETCH_ERROR_CODES` (see the table in this file).
   */
  fetch(url: string, options?: { signal?: AbortSignal; timeoutMs?: number }): Promise<FetchedAudio>;

  /**
   * Removes the temp files that processes which died mid-download (SIGKILL, a crash) left behind;
   * never those of a live process. Called once when the processor starts. Resolves with how many
   * were removed.
   */
  sweepStale?(): Promise<number>;
}
