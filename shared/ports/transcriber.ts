/**
 * Transcriber port: turns one recording (a local file, already downloaded) into text and measures
 * how long the audio really is — that length, not the integrator's claim, settles the call's capacity.
 *
 * Adapters: the local engine (`createLocalTranscriber`: ffmpeg → 16 kHz mono WAV → pocketsphinx, no
 * network), any OpenAI-compatible `/v1/audio/transcriptions` endpoint (`createOpenAiTranscriber`), and
 * the one that states no engine is available (`createUnavailableTranscriber`); `selectTranscriber`
 * picks one from config.
 *
 * Every failure is a `StepError` (`shared/ports/step-error.ts`) whose `code` is one of
 * `TRANSCRIPTION_ERROR_CODES`:
 *
 * | code                          | retriable | when                                                              |
 * |-------------------------------|-----------|-------------------------------------------------------------------|
 * | `transcription_unavailable`   | no        | no engine is configured or installed; the message says how to set one up (`TRANSCRIPTION_SETUP_HINT`) |
 * | `audio_undecodable`           | no        | the file is not audio ffmpeg can read (or holds no audio stream)  |
 * | `audio_too_long`              | no        | the recording is longer than the adapter's cap (`AUDIO_MAX_SECONDS`); found before it is decoded when its length can be read |
 * | `transcription_failed`        | yes       | the engine crashed or exited with an error; the remote endpoint is unreachable, answered 5xx, or answered something that is not a transcription |
 * | `transcription_timeout`       | yes       | no transcript within the adapter's deadline (also a remote 408)   |
 * | `transcription_rejected`      | no        | the remote endpoint refused the request: a 4xx other than 408/429 (bad key, unknown model, file too large), or a redirect |
 * | `transcription_rate_limited`  | yes       | the remote endpoint answered 429                                  |
 */
import type { TranscriptSegment } from '../domain/transcript/transcript-segments.ts';
import type { StepError } from './step-error.ts';

/** The stable `StepError.code`s a `Transcriber` raises; see the table above. */
export const TRANSCRIPTION_ERROR_CODES = [
  'transcription_unavailable',
  'audio_undecodable',
  'audio_too_long',
  'transcription_failed',
  'transcription_timeout',
  'transcription_rejected',
  'transcription_rate_limited',
] as const;

/** One of `TRANSCRIPTION_ERROR_CODES`. */
export type TranscriptionErrorCode = (typeof TRANSCRIPTION_ERROR_CODES)[number];

/** A `StepError` raised by `Transcriber.transcribe`. */
export type TranscriptionError = StepError & { readonly code: TranscriptionErrorCode };

/**
 * How to get a transcription engine; ends the message of every `transcription_unavailable`.
 * Names the Debian packages of the local engine and the settings of a remote one.
 */
export const TRANSCRIPTION_SETUP_HINT =
  'To transcribe recordings, install the local engine (Debian/Ubuntu: apt-get install ffmpeg pocketsphinx pocketsphinx-en-us) ' +
  'or set TRANSCRIBE_URL (and TRANSCRIBE_API_KEY, TRANSCRIBE_MODEL) to an OpenAI-compatible /v1/audio/transcriptions endpoint.';

/** One recording to transcribe. */
export interface TranscriptionInput {
  /** Path of a local file holding the recording, in any container/codec ffmpeg reads. Not modified or deleted. */
  audioPath: string;
  /** Media type the recording was served with (`audio/mpeg`), lower-cased; a hint for remote engines that go by file name. */
  contentType?: string;
  /**
   * Cancels the work (e.g. on shutdown): child processes are killed, the HTTP exchange is aborted,
   * temp files are removed, and the promise rejects with the signal's `reason` — not a `StepError`,
   * since neither the audio nor the engine is at fault.
   */
  signal?: AbortSignal;
}

/** The transcript of one recording. */
export interface Transcription {
  /** The recognised words, whitespace-normalised; empty when the recording holds no recognisable speech. */
  text: string;
  /** The real length of the audio in seconds, measured from the audio itself (not from metadata the client sent). */
  durationSeconds: number;
  /** Which engine produced the text, e.g. `pocketsphinx` or `openai:whisper-1`. */
  engine: string;
  /**
   * The text in timed pieces, in order (pocketsphinx's utterances, the remote engine's segments),
   * with the speaker when the engine tells speakers apart; absent when the engine gave none.
   */
  segments?: TranscriptSegment[];
}

/** Whether a transcriber can work now, and if not, exactly what is missing. */
export type TranscriberAvailability = { ok: true } | { ok: false; reason: string };

export interface Transcriber {
  /**
   * Transcribes one recording and measures its real length.
   * @throws StepError with a code of `TRANSCRIPTION_ERROR_CODES` (see the table in this file); its
   *   message is for a person and never contains an API key.
   * @throws the signal's reason when `input.signal` aborts.
   */
  transcribe(input: TranscriptionInput): Promise<Transcription>;

  /** One line for logs and health output: which engine, where. Never contains secrets. */
  describe(): string;

  /**
   * Whether `transcribe` can work: the local engine checks its programs and model files; a remote
   * one only that it is configured (reachability shows per call). Never rejects.
   */
  available(): Promise<TranscriberAvailability>;

  /**
   * Removes the temp files (decoded audio) that processes which died mid-transcription left
   * behind; never those of a live process. Called once when the processor starts. Resolves with
   * how many were removed.
   */
  sweepStale?(): Promise<number>;
}
