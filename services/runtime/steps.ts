/**
 * The processing steps' adapters the configuration asks for: SSRF-safe audio download, the
 * transcription engine (remote when TRANSCRIBE_URL is set, else the local engine when installed,
 * else one that fails calls with `transcription_unavailable` and says how to configure one), and
 * the analyser (remote when ANALYSE_URL is set, else the built-in one).
 */
import { selectAnalyser } from '../../shared/adapters/analysis/select-analyser.ts';
import { createHttpAudioSource } from '../../shared/adapters/audio/http-audio-source.ts';
import { selectTranscriber } from '../../shared/adapters/transcription/select-transcriber.ts';
import type { Config } from '../../shared/config.ts';
import type { Analyser } from '../../shared/ports/analyser.ts';
import type { AudioSource } from '../../shared/ports/audio-source.ts';
import type { Transcriber } from '../../shared/ports/transcriber.ts';

export interface Steps {
  audio: AudioSource;
  transcriber: Transcriber;
  analyser: Analyser;
}

export const openSteps = (config: Config): Steps => ({
  audio: createHttpAudioSource({
    maxBytes: config.audioMaxBytes,
    timeoutMs: config.audioFetchTimeoutMs,
    allowPrivate: config.audioFetchAllowPrivate,
    allowedPorts: config.audioAllowedPorts,
  }),
  transcriber: selectTranscriber({
    transcribeUrl: config.transcribeUrl,
    transcribeApiKey: config.transcribeApiKey,
    transcribeModel: config.transcribeModel,
    maxSeconds: config.audioMaxSeconds,
  }),
  analyser: selectAnalyser({
    analyseUrl: config.analyseUrl,
    analyseApiKey: config.analyseApiKey,
    analyseModel: config.analyseModel,
  }),
});
