/**
 * Transcription by any OpenAI-compatible `/v1/audio/transcriptions` endpoint (OpenAI, Groq,
 * faster-whisper-server / speaches, LocalAI, vLLM…).
 *
 * Request: POST `{url}/v1/audio/transcriptions` (a trailing `/v1` in `url` tolerated), multipart form
 * with `file` (the recording, streamed from disk), `model` and `response_format=verbose_json`;
 * `Authorization: Bearer <apiKey>` when a key is set. The file is sent as `recording.<ext>`: servers
 * pick the decoder by extension, and the temp file's own name may have none, so the extension comes
 * from the path or else from the content type.
 *
 * Duration: `duration` of the verbose_json answer (the server decoded the audio), else measured here
 * (`measureAudioDuration`: ffprobe, or the header of a WAV file).
 *
 * Errors (StepError): 429 `transcription_rate_limited`, 5xx and unreachable `transcription_failed`,
 * 408 and our own deadline `transcription_timeout` (all retriable); any other 4xx, or a redirect,
 * `transcription_rejected` (terminal); a 2xx that is not a transcription `transcription_failed`
 * (retriable). The API key is sent only in the Authorization header and is scrubbed from every
 * message; server error text is quoted shortened and scrubbed.
 */
import { openAsBlob } from 'node:fs';
import { extname } from 'node:path';
import { StepError } from '../../ports/step-error.ts';
import type { Transcriber, TranscriberAvailability, Transcription, TranscriptionInput } from '../../ports/transcriber.ts';
import { measureAudioDuration } from './audio-duration.ts';

export interface OpenAiTranscriberOptions {
  /** Base URL of the server, e.g. `https://api.openai.com` or `http://127.0.0.1:8000` (a trailing `/v1` is accepted too). */
  url: string;
  /** Sent as `Authorization: Bearer …` when set; local servers often need none. */
  apiKey?: string | undefined;
  /** Model name; default `whisper-1`. */
  model?: string | undefined;
  /** Deadline for the whole exchange, upload and answer included; default `DEFAULT_REMOTE_TIMEOUT_MS`. */
  timeoutMs?: number | undefined;
}

/** Uploading an hour of audio and transcribing it remotely can take minutes. */
export const DEFAULT_REMOTE_TIMEOUT_MS = 10 * 60_000;
export const DEFAULT_TRANSCRIBE_MODEL = 'whisper-1';

/** A verbose_json answer for an hour-long call, segments included, is a few MB. */
const MAX_RESPONSE_BYTES = 32 * 1024 * 1024;
const MAX_QUOTED_ERROR_CHARS = 200;

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

/** The server's origin (for messages), and `{url}/v1/audio/transcriptions`. */
const endpointOf = (url: string): { origin: string; endpoint: URL } => {
  const parsed = new URL(url);
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new TypeError(`transcription URL must be http(s), got ${parsed.protocol}`);
  if (parsed.username || parsed.password) throw new TypeError('transcription URL must not carry credentials; pass the key as apiKey');
  const prefix = parsed.pathname.replace(/\/+$/, '').replace(/\/v1$/, '');
  return { origin: parsed.origin, endpoint: new URL(`${parsed.origin}${prefix}/v1/audio/transcriptions`) };
};

const readCapped = async (response: Response): Promise<string> => {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_RESPONSE_BYTES) {
      await reader.cancel();
      throw new StepError('transcription_failed', `The transcription answer is larger than ${MAX_RESPONSE_BYTES} bytes.`, true);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
};

/** @throws TypeError when `url` is not an http(s) URL, or carries a user or password. */
export const createOpenAiTranscriber = (options: OpenAiTranscriberOptions): Transcriber => {
  const { origin: where, endpoint } = endpointOf(options.url);
  const model = options.model?.trim() || DEFAULT_TRANSCRIBE_MODEL;
  const timeoutMs = options.timeoutMs ?? DEFAULT_REMOTE_TIMEOUT_MS;
  const engine = `openai:${model}`;
  const secret = options.apiKey;

  /** Removes the key, and anything shaped like a key or bearer token, from text we pass on. */
  const scrub = (text: string): string => {
    let out = secret ? text.split(secret).join('[redacted]') : text;
    out = out.replace(/\b(?:sk|pk|rk|gsk)[-_][A-Za-z0-9_-]{6,}/g, '[redacted]').replace(/Bearer\s+\S+/gi, 'Bearer [redacted]');
    return out.length > MAX_QUOTED_ERROR_CHARS ? `${out.slice(0, MAX_QUOTED_ERROR_CHARS)}…` : out;
  };

  const serverSays = (body: string): string => {
    try {
      const parsed = JSON.parse(body) as { error?: { message?: unknown } | string; message?: unknown; detail?: unknown };
      const message = typeof parsed.error === 'string' ? parsed.error : (parsed.error?.message ?? parsed.message ?? parsed.detail);
      return typeof message === 'string' && message.trim() ? `: ${scrub(message.trim())}` : '';
    } catch {
      return body.trim() && !body.trimStart().startsWith('<') ? `: ${scrub(body.trim())}` : '';
    }
  };

  const httpError = async (response: Response): Promise<StepError> => {
    const said = serverSays(await readCapped(response).catch(() => ''));
    const status = `HTTP ${response.status}`;
    if (response.status === 429) {
      const retryAfter = response.headers.get('retry-after');
      return new StepError('transcription_rate_limited', `The transcription service at ${where} is rate limiting (${status}${retryAfter ? `, Retry-After ${scrub(retryAfter)}` : ''})${said}.`, true);
    }
    if (response.status === 408) return new StepError('transcription_timeout', `The transcription service at ${where} timed out (${status})${said}.`, true);
    if (response.status >= 500) return new StepError('transcription_failed', `The transcription service at ${where} failed (${status})${said}.`, true);
    if (response.status >= 300 && response.status < 400) {
      return new StepError('transcription_rejected', `The transcription service at ${where} answered with a redirect (${status}); configure the final URL.`, false);
    }
    if (response.status === 404) {
      return new StepError('transcription_rejected', `The transcription service at ${where} has no ${endpoint.pathname} (${status})${said}; check TRANSCRIBE_URL.`, false);
    }
    return new StepError('transcription_rejected', `The transcription service at ${where} refused the request (${status})${said}.`, false);
  };

  const invalid = (why: string, cause?: unknown): StepError =>
    new StepError('transcription_failed', `The transcription service at ${where} gave an unusable answer: ${why}`, true, cause === undefined ? undefined : { cause });

  const transcribe = async (input: TranscriptionInput): Promise<Transcription> => {
    const caller = input.signal;
    caller?.throwIfAborted();
    let file: Blob;
    try {
      file = await openAsBlob(input.audioPath, input.contentType ? { type: input.contentType } : undefined);
    } catch (error) {
      throw new StepError('audio_undecodable', 'The recording file cannot be read.', false, { cause: error });
    }
    const form = new FormData();
    form.append('file', file, uploadFileName(input.audioPath, input.contentType));
    form.append('model', model);
    form.append('response_format', 'verbose_json');
    const headers: Record<string, string> = { accept: 'application/json' };
    if (secret) headers.authorization = `Bearer ${secret}`;
    const deadline = AbortSignal.timeout(timeoutMs);
    const signal = caller ? AbortSignal.any([caller, deadline]) : deadline;

    let text: string;
    try {
      const response = await fetch(endpoint, { method: 'POST', headers, body: form, signal, redirect: 'manual' });
      if (!response.ok) throw await httpError(response);
      text = await readCapped(response);
    } catch (error) {
      if (caller?.aborted) throw caller.reason;
      if (error instanceof StepError) throw error;
      if (deadline.aborted) {
        throw new StepError('transcription_timeout', `The transcription service at ${where} did not answer within ${timeoutMs} ms.`, true, { cause: error });
      }
      const reason = error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error);
      throw new StepError('transcription_failed', `The transcription service at ${where} could not be reached: ${scrub(reason)}`, true, { cause: error });
    }

    let answer: unknown;
    try {
      answer = JSON.parse(text);
    } catch (error) {
      throw invalid('the response body is not JSON', error);
    }
    const { text: transcript, duration } = (typeof answer === 'object' && answer !== null ? answer : {}) as { text?: unknown; duration?: unknown };
    if (typeof transcript !== 'string') throw invalid('it has no "text"');
    const stated = typeof duration === 'string' && duration.trim() !== '' ? Number(duration) : duration;
    const durationSeconds =
      typeof stated === 'number' && Number.isFinite(stated) && stated >= 0 ? stated : await measureAudioDuration(input.audioPath, { signal: caller });
    return { text: transcript.trim(), durationSeconds, engine };
  };

  return {
    transcribe,
    describe: () => `OpenAI-compatible transcriber (model ${model} at ${where})`,
    available: async (): Promise<TranscriberAvailability> => ({ ok: true }),
  };
};
