/**
 * Picks the transcriber from configuration: an OpenAI-compatible endpoint when `transcribeUrl` is
 * set; else the local engine when its programs and model are installed; else the unavailable
 * transcriber, which fails audio calls with `transcription_unavailable` and says how to set an engine
 * up. Reads no environment: `shared/config.ts` does that once and passes the values in.
 *
 * Choosing is synchronous so the service can be wired in one expression; looking for the local
 * engine starts each of its programs once (a few ms), only when no URL is set.
 */
import type { Transcriber } from '../../ports/transcriber.ts';
import { detectLocalEngineSync } from './local-engine.ts';
import { createLocalTranscriber, type LocalTranscriberOptions } from './local-transcriber.ts';
import { createOpenAiTranscriber } from './openai-transcriber.ts';
import { createUnavailableTranscriber } from './unavailable-transcriber.ts';

export interface TranscriberConfig {
  /** Base URL of an OpenAI-compatible server (TRANSCRIBE_URL); blank or absent → the local engine. */
  transcribeUrl?: string | undefined;
  /** Bearer key of that server (TRANSCRIBE_API_KEY). */
  transcribeApiKey?: string | undefined;
  /** Model name sent to that server (TRANSCRIBE_MODEL); default `whisper-1`. */
  transcribeModel?: string | undefined;
  /** Deadline of one transcription; default 10 min remote, 45 min local. */
  timeoutMs?: number | undefined;
  /** Longest recording transcribed, in seconds (AUDIO_MAX_SECONDS); default 4 hours. */
  maxSeconds?: number | undefined;
}

/**
 * @param local Where the local engine's programs and model are, when not the Debian defaults on PATH.
 * @throws TypeError when transcribeUrl is set but is not an http(s) URL, or carries credentials.
 */
export const selectTranscriber = (config: TranscriberConfig, local: LocalTranscriberOptions = {}): Transcriber => {
  const url = config.transcribeUrl?.trim();
  if (url) {
    return createOpenAiTranscriber({
      url,
      apiKey: config.transcribeApiKey?.trim() || undefined,
      model: config.transcribeModel?.trim() || undefined,
      timeoutMs: config.timeoutMs,
      maxSeconds: config.maxSeconds,
    });
  }
  const detection = detectLocalEngineSync(local);
  if (!detection.ok) return createUnavailableTranscriber(detection.reason);
  return createLocalTranscriber({
    ...local,
    timeoutMs: config.timeoutMs ?? local.timeoutMs,
    maxSeconds: config.maxSeconds ?? local.maxSeconds,
  });
};
