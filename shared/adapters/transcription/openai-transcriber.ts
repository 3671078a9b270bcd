/**
 * Transcription by any OpenAI-compatible `/v1/audio/transcriptions` endpoint (OpenAI, Groq,
 * faster-whisper-server / speaches, LocalAI, vLLM…).
 *
 * Request: POST `{url}/v1/audio/transcriptions` (a trailing `/v1` in `url` tolerated), multipart form
 * (`multipartBody`) with `file` (the recording, streamed from disk), `model` and `response_format=verbose_json`;
 * `Authorization: Bearer <apiKey>` when a key is set. The file is sent as `recording.<ext>`: servers
 * pick the decoder by extension, and the temp file's own name may have none, so the extension comes
 * from the path or else from the content type.
 *
 * Length cap: a recording whose container states a length over `maxSeconds` (read by ffprobe, when
 * installed) is not sent: `audio_too_long` (terminal).
 *
 * Segments: `segments` of the verbose_json answer (`start`, `end`, `text`; `speaker` when the server
 * tells speakers apart), kept as the transcript's timed segments.
 *
 * Duration: `duration` of the verbose_json answer (the server decoded the audio), else measured here
 * (`measureAudioDuration`: ffprobe, or the header of a WAV file). The call is charged by it, so a
 * stated duration over `maxSeconds` is not believed: it is measured here as well, and a recording
 * that really is longer is `audio_too_long`, as the local engine makes it.
 *
 * Errors (StepError): 429 `transcription_rate_limited`, 5xx and unreachable `transcription_failed`,
 * 408 and our own deadline `transcription_timeout` (all retriable); any other 4xx, or a redirect,
 * `transcription_rejected` (terminal); a 2xx that is not a transcription `transcription_failed`
 * (retriable). The API key is sent only in the Authorization header and is scrubbed from every
 * message; server error text is quoted shortened and scrubbed.
 */
import { openAsBlob } from 'node:fs';
import { extname } from 'node:path';
import type { TranscriptSegment } from '../../domain/transcript/transcript-segments.ts';
import { StepError } from '../../ports/step-error.ts';
import {
  createScrubber,
  httpStatusError,
  openAiEndpoint,
  postToService,
  readCapped,
  serverMessage,
  type ServiceFailures,
} from '../openai-compatible.ts';
import { multipartBody } from '../multipart-form.ts';
import type {
  Transcriber,
  TranscriberAvailability,
  Transcription,
  TranscriptionInput,
} from '../../ports/transcriber.ts';
import { audioTooLong, DEFAULT_AUDIO_MAX_SECONDS, measureAudioDuration, probeAudioSeconds } from './audio-duration.ts';

export interface OpenAiTranscriberOptions {
  /** Base URL of the server, e.g. `https://api.openai.com` or `http://127.0.0.1:8000` (a trailing `/v1` is accepted too). */
  url: string;
  /** Sent as `Authorization: Bearer …` when set; local servers often need none. */
  apiKey?: string | undefined;
  /** Model name; default `whisper-1`. */
  model?: string | undefined;
  /** Deadline for the whole exchange, upload and answer included; default `DEFAULT_REMOTE_TIMEOUT_MS`. */
  timeoutMs?: number | undefined;
  /** Longest recording sent, in seconds (`AUDIO_MAX_SECONDS`), by the length ffprobe reads; default `DEFAULT_AUDIO_MAX_SECONDS`. */
  maxSeconds?: number | undefined;
}

/** Uploading an hour of audio and transcribing it remotely can take minutes. */
export const DEFAULT_REMOTE_TIMEOUT_MS = 10 * 60_000;
export const DEFAULT_TRANSCRIBE_MODEL = 'whisper-1';

/** A verbose_json answer for an hour-long call, segments included, is a few MB. */
const MAX_RESPONSE_BYTES = 32 * 1024 * 1024;
const MAX_QUOTED_ERROR_CHARS = 200;
/** Key-shaped tokens scrubbed from quoted text, besides the key itself (`gsk_…`: Groq). */
const KEY_SHAPED = /\b(?:sk|pk|rk|gsk)[-_][A-Za-z0-9_-]{6,}/g;

/** File extensions the OpenAI endpoint (and servers copying it) recognise, by media type. */
const EXTENSION_OF_TYPE: Record<string, string> = {
  'audio/mpeg': 'mp3',
  'audio/mp3': 'mp3',
  'audio/mpga': 'mp3',
  'audio/wav': 'wav',
  'audio/wave': 'wav',
  'audio/x-wav': 'wav',
  'audio/vnd.wave': 'wav',
  'audio/mp4': 'm4a',
  'audio/m4a': 'm4a',
  'audio/x-m4a': 'm4a',
  'video/mp4': 'mp4',
  'audio/ogg': 'ogg',
  'audio/opus': 'ogg',
  'audio/webm': 'webm',
  'video/webm': 'webm',
  'audio/flac': 'flac',
  'audio/x-flac': 'flac',
  'video/mpeg': 'mpeg',
};

/** The name the file is uploaded under: `recording.<ext>`, the extension from the path, else the content type. */
export const uploadFileName = (audioPath: string, contentType?: string): string => {
  const fromPath = extname(audioPath).slice(1).toLowerCase();
  const fromType = contentType ? EXTENSION_OF_TYPE[contentType.split(';')[0]!.trim().toLowerCase()] : undefined;
  const extension = /^[a-z0-9]{1,5}$/.test(fromPath) ? fromPath : fromType;
  return extension ? `recording.${extension}` : 'recording';
};

const seconds = (value: unknown): number | null =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : null;

/**
 * The `segments` of a verbose_json answer (`{start, end, text}`, and `speaker` from servers that
 * tell speakers apart); undefined when there are none. A segment that is not an object with text
 * is skipped: a server's odd entry costs that entry, not the transcript.
 */
export const segmentsOf = (segments: unknown): TranscriptSegment[] | undefined => {
  if (!Array.isArray(segments)) return undefined;
  const read: TranscriptSegment[] = [];
  for (const segment of segments) {
    if (typeof segment !== 'object' || segment === null) continue;
    const { start, end, speaker, text } = segment as Record<string, unknown>;
    if (typeof text !== 'string' || text.trim() === '') continue;
    read.push({
      start: seconds(start),
      end: seconds(end),
      speaker: typeof speaker === 'string' && speaker.trim() !== '' ? speaker.trim() : null,
      text: text.trim(),
    });
  }
  return read.length > 0 ? read : undefined;
};

const readAnswer = (response: Response): Promise<string> =>
  readCapped(
    response,
    MAX_RESPONSE_BYTES,
    () =>
      new StepError(
        'transcription_failed',
        `The transcription answer is larger than ${MAX_RESPONSE_BYTES} bytes.`,
        true,
      ),
  );

/** @throws TypeError when `url` is not an http(s) URL, or carries a user or password. */
export const createOpenAiTranscriber = (options: OpenAiTranscriberOptions): Transcriber => {
  const { origin: where, endpoint } = openAiEndpoint(options.url, 'audio/transcriptions', 'transcription');
  const model = options.model?.trim() || DEFAULT_TRANSCRIBE_MODEL;
  const timeoutMs = options.timeoutMs ?? DEFAULT_REMOTE_TIMEOUT_MS;
  const maxSeconds = options.maxSeconds ?? DEFAULT_AUDIO_MAX_SECONDS;
  const engine = `openai:${model}`;
  const secret = options.apiKey;
  const scrub = createScrubber(secret, MAX_QUOTED_ERROR_CHARS, KEY_SHAPED);
  const service: ServiceFailures = {
    what: 'transcription',
    where,
    rateLimited: 'transcription_rate_limited',
    timeout: 'transcription_timeout',
    unavailable: 'transcription_failed',
    rejected: 'transcription_rejected',
    scrub,
  };

  const httpError = async (response: Response): Promise<StepError> => {
    const said = serverMessage(await readAnswer(response).catch(() => ''), scrub, { detail: true, plainText: true });
    if (response.status === 404) {
      return new StepError(
        'transcription_rejected',
        `The transcription service at ${where} has no ${endpoint.pathname} (HTTP 404)${said}; check TRANSCRIBE_URL.`,
        false,
      );
    }
    return httpStatusError(service, response, said);
  };

  const invalid = (why: string, cause?: unknown): StepError =>
    new StepError(
      'transcription_failed',
      `The transcription service at ${where} gave an unusable answer: ${why}`,
      true,
      cause === undefined ? undefined : { cause },
    );

  /** The duration the server states, when it is a length a recording sent here can have. */
  const statedSeconds = (duration: unknown): number | undefined => {
    const stated = typeof duration === 'string' && duration.trim() !== '' ? Number(duration) : duration;
    return typeof stated === 'number' && Number.isFinite(stated) && stated >= 0 && stated <= maxSeconds
      ? stated
      : undefined;
  };

  /** The recording's length measured here; over `maxSeconds` it is `audio_too_long`. */
  const measuredSeconds = async (path: string, signal: AbortSignal | undefined): Promise<number> => {
    const seconds = await measureAudioDuration(path, { signal });
    if (seconds > maxSeconds) throw audioTooLong(maxSeconds, seconds);
    return seconds;
  };

  const transcribe = async (input: TranscriptionInput): Promise<Transcription> => {
    const caller = input.signal;
    caller?.throwIfAborted();
    const length = await probeAudioSeconds(input.audioPath, { signal: caller });
    if (length !== undefined && length > maxSeconds) throw audioTooLong(maxSeconds, length);
    let file: Blob;
    try {
      file = await openAsBlob(input.audioPath, input.contentType ? { type: input.contentType } : undefined);
    } catch (error) {
      throw new StepError('audio_undecodable', 'The recording file cannot be read.', false, { cause: error });
    }
    const form = multipartBody([
      { name: 'file', file, filename: uploadFileName(input.audioPath, input.contentType) },
      { name: 'model', value: model },
      { name: 'response_format', value: 'verbose_json' },
    ]);
    const text = await postToService(service, {
      endpoint,
      headers: { accept: 'application/json', 'content-type': form.contentType },
      body: form.body,
      apiKey: secret,
      timeoutMs,
      signal: caller,
      read: readAnswer,
      httpError,
    });

    let answer: unknown;
    try {
      answer = JSON.parse(text);
    } catch (error) {
      throw invalid('the response body is not JSON', error);
    }
    const {
      text: transcript,
      duration,
      segments,
    } = (typeof answer === 'object' && answer !== null ? answer : {}) as {
      text?: unknown;
      duration?: unknown;
      segments?: unknown;
    };
    if (typeof transcript !== 'string') throw invalid('it has no "text"');
    const durationSeconds = statedSeconds(duration) ?? (await measuredSeconds(input.audioPath, caller));
    const timed = segmentsOf(segments);
    return { text: transcript.trim(), durationSeconds, engine, ...(timed ? { segments: timed } : {}) };
  };

  return {
    transcribe,
    describe: () => `OpenAI-compatible transcriber (model ${model} at ${where})`,
    available: async (): Promise<TranscriberAvailability> => ({ ok: true }),
  };
};
