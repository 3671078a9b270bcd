/**
 * The local engine, no network: ffmpeg decodes whatever the recording is into 16 kHz mono 16-bit
 * PCM WAV in a fresh temp directory, pocketsphinx (CMU Sphinx, US English model) recognises it, the
 * temp directory is removed. Each utterance pocketsphinx hears is a segment timed by its words
 * (`pocketsphinx-output.ts`). The duration is that of the decoded audio (data bytes of the WAV ÷
 * 32 000 bytes/s), so it is the length of what was actually heard, whatever the container claims.
 *
 * Commands (no shell; `model` = `/usr/share/pocketsphinx/model/en-us` by default):
 *   ffprobe … -show_entries format=duration …  (the stated length; over `maxSeconds`: `audio_too_long`)
 *   ffmpeg -nostdin -hide_banner -loglevel error -protocol_whitelist file -format_whitelist <containers>
 *          -i file:<input> -map 0:a:0 -map_metadata -1 -t <maxSeconds + 1> -ac 1 -ar 16000 -c:a pcm_s16le
 *          -fflags +bitexact -flags:a +bitexact -f wav -y <tmp>/audio.wav
 *   pocketsphinx_continuous -infile <tmp>/audio.wav -hmm <model>/en-us -lm <model>/en-us.lm.bin -dict <model>/cmudict-en-us.dict -time yes
 *   (5.x: pocketsphinx -hmm … -lm … -dict … live <tmp>/audio.wav)
 * No metadata and bit-exact output give a plain 44-byte WAV header, which 5prealpha assumes.
 * The input is opened as `ffmpeg-input.ts` says: a local file only, real containers only.
 *
 * Errors (StepError): engine missing `transcription_unavailable` (terminal, says what to install);
 * ffmpeg cannot read the input `audio_undecodable` (terminal); longer than `maxSeconds` by its
 * stated length or by what was decoded `audio_too_long` (terminal: a 2 MB FLAC of hours of silence
 * would otherwise become a WAV of hundreds of MB); a program crashes or exits with an
 * error, or the disk is full, `transcription_failed` (retriable); the deadline, which covers both
 * programs, passes `transcription_timeout` (retriable).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { StepError } from '../../ports/step-error.ts';
import {
  TRANSCRIPTION_SETUP_HINT,
  type Transcriber,
  type TranscriberAvailability,
  type Transcription,
  type TranscriptionInput,
} from '../../ports/transcriber.ts';
import { processTempPrefix, sweepStaleTempFiles } from '../audio/process-temp-files.ts';
import { audioTooLong, DEFAULT_AUDIO_MAX_SECONDS, probeAudioSeconds, readWavDuration } from './audio-duration.ts';
import { ffmpegInput } from './ffmpeg-input.ts';
import { DEBIAN_MODEL_DIR, detectLocalEngine, type LocalEngine, type LocalEngineOptions } from './local-engine.ts';
import { readPocketsphinxOutput } from './pocketsphinx-output.ts';
import { lastLine, type ProcessOutcome, runProcess } from './run-process.ts';

export interface LocalTranscriberOptions extends LocalEngineOptions {
  /** Deadline of one transcription, decoding and recognition together; default `DEFAULT_LOCAL_TIMEOUT_MS`. */
  timeoutMs?: number | undefined;
  /** Where the per-call temp directory is made; default the OS temp dir. */
  tempDir?: string | undefined;
  /** Longest recording decoded, in seconds (`AUDIO_MAX_SECONDS`); default `DEFAULT_AUDIO_MAX_SECONDS`. */
  maxSeconds?: number | undefined;
}

/**
 * pocketsphinx needs about 0.4 × the audio's length of one core (measured on a busy 2-core machine),
 * plus ~1 s to load the model: an hour-long call takes ~25 min, which this leaves room for.
 */
export const DEFAULT_LOCAL_TIMEOUT_MS = 45 * 60_000;

const ENGINE = 'pocketsphinx';
/** Temp directories are `transcribe-<pid>-…`, so those of a dead process can be swept. */
const TEMP_PREFIX = 'transcribe-';
/** Samples per second of the decoded audio (the rate the en-us acoustic model was trained at). */
const SAMPLE_RATE = 16_000;
/** ffmpeg errors that are about this machine, not the recording. */
const RESOURCE_TROUBLE =
  /No space left|Cannot allocate memory|Resource temporarily unavailable|Too many open files|Permission denied/i;
const NO_AUDIO_STREAM = /matches no streams|does not contain any stream/i;

/** The arguments pocketsphinx gets for `wav` in each command-line shape. */
export const pocketsphinxArgs = (engine: LocalEngine, wav: string): string[] => {
  const model = ['-hmm', engine.model.hmm, '-lm', engine.model.lm, '-dict', engine.model.dict];
  // 5prealpha prints word times only when asked; 5.x's JSON always has them.
  return engine.pocketsphinx.cli === 'continuous'
    ? ['-infile', wav, ...model, '-time', 'yes']
    : [...model, 'live', wav];
};

/** ffprobe beside the ffmpeg in use (same directory when ffmpeg is given by path). */
const ffprobeBeside = (ffmpeg: string): string => (ffmpeg.includes('/') ? join(dirname(ffmpeg), 'ffprobe') : 'ffprobe');

export const createLocalTranscriber = (options: LocalTranscriberOptions = {}): Transcriber => {
  const timeoutMs = options.timeoutMs ?? DEFAULT_LOCAL_TIMEOUT_MS;
  const maxSeconds = options.maxSeconds ?? DEFAULT_AUDIO_MAX_SECONDS;
  if (!(maxSeconds > 0)) throw new RangeError(`maxSeconds must be > 0, got ${maxSeconds}`);
  const tempDir = options.tempDir ?? tmpdir();
  let found: LocalEngine | undefined;

  /** The engine, once found; a negative answer is not kept, so installing the packages needs no restart. */
  const locate = async (): Promise<{ ok: true; engine: LocalEngine } | { ok: false; reason: string }> => {
    if (found) return { ok: true, engine: found };
    const detection = await detectLocalEngine(options);
    if (detection.ok) found = detection.engine;
    return detection;
  };

  /** Turns an outcome that is not a clean exit into the step's error. */
  const failure = (program: string, outcome: Exclude<ProcessOutcome, { kind: 'exited' }>): never => {
    switch (outcome.kind) {
      case 'aborted':
        throw outcome.reason;
      case 'timeout':
        throw new StepError(
          'transcription_timeout',
          `Local transcription did not finish within ${timeoutMs} ms (${program} was stopped).`,
          true,
        );
      case 'signalled':
        throw new StepError(
          'transcription_failed',
          `${program} crashed (killed by ${outcome.signal}) while transcribing.`,
          true,
        );
      case 'missing':
        found = undefined; // uninstalled while running: look again next time
        throw new StepError(
          'transcription_unavailable',
          `${program} can no longer be started (${outcome.error.code}). ${TRANSCRIPTION_SETUP_HINT}`,
          false,
        );
      case 'failed':
        throw new StepError('transcription_failed', `${program} could not be run: ${outcome.error.message}`, true, {
          cause: outcome.error,
        });
    }
  };

  const transcribe = async (input: TranscriptionInput): Promise<Transcription> => {
    const { signal } = input;
    signal?.throwIfAborted();
    const located = await locate();
    if (!located.ok)
      throw new StepError('transcription_unavailable', `${located.reason} ${TRANSCRIPTION_SETUP_HINT}`, false);
    const { engine } = located;
    const deadline = Date.now() + timeoutMs;
    const remaining = () => Math.max(1, deadline - Date.now());

    // A stated length over the cap fails before anything is decoded; a container that states
    // none, or lies, is cut by -t a second past the cap and judged by what was decoded.
    const stated = await probeAudioSeconds(input.audioPath, {
      ffprobePath: ffprobeBeside(engine.ffmpeg),
      timeoutMs: Math.min(60_000, remaining()),
      signal,
    });
    if (stated !== undefined && stated > maxSeconds) throw audioTooLong(maxSeconds, stated);

    const dir = await mkdtemp(join(tempDir, processTempPrefix(TEMP_PREFIX)));
    try {
      const source = ffmpegInput(input.audioPath);
      const wav = join(dir, 'audio.wav');
      const decoded = await runProcess(
        engine.ffmpeg,
        [
          '-nostdin',
          '-hide_banner',
          '-loglevel',
          'error',
          ...source.args,
          '-map',
          '0:a:0',
          '-map_metadata',
          '-1',
          '-t',
          String(maxSeconds + 1),
          '-ac',
          '1',
          '-ar',
          String(SAMPLE_RATE),
          '-c:a',
          'pcm_s16le',
          '-fflags',
          '+bitexact',
          '-flags:a',
          '+bitexact',
          '-f',
          'wav',
          '-y',
          wav,
        ],
        { timeoutMs: remaining(), signal, maxStdoutBytes: 1024 * 1024 },
      );
      if (decoded.kind !== 'exited') return failure('ffmpeg', decoded);
      if (decoded.exitCode !== 0) {
        const why = (lastLine(decoded.stderr) ?? `exit code ${decoded.exitCode}`)
          .split(source.url)
          .join('the recording');
        if (RESOURCE_TROUBLE.test(decoded.stderr))
          throw new StepError('transcription_failed', `ffmpeg could not convert the recording: ${why}`, true);
        if (NO_AUDIO_STREAM.test(decoded.stderr))
          throw new StepError('audio_undecodable', 'The recording holds no audio stream.', false);
        throw new StepError(
          'audio_undecodable',
          `The recording is not audio that can be decoded (ffmpeg: ${why}).`,
          false,
        );
      }
      const durationSeconds = await readWavDuration(wav);
      if (durationSeconds === undefined)
        throw new StepError('transcription_failed', 'ffmpeg reported success but wrote no readable WAV file.', true);
      if (durationSeconds > maxSeconds) throw audioTooLong(maxSeconds);
      if (durationSeconds === 0) return { text: '', durationSeconds, engine: ENGINE };

      const program = engine.pocketsphinx.path;
      const recognised = await runProcess(program, pocketsphinxArgs(engine, wav), { timeoutMs: remaining(), signal });
      if (recognised.kind !== 'exited') return failure('pocketsphinx', recognised);
      if (recognised.exitCode !== 0) {
        const why = lastLine(recognised.stderr, /^(?:ERROR|FATAL)/) ?? `exit code ${recognised.exitCode}`;
        throw new StepError(
          'transcription_failed',
          `pocketsphinx failed (exit code ${recognised.exitCode}): ${why}`,
          true,
        );
      }
      const { text, segments } = readPocketsphinxOutput(recognised.stdout);
      return { text, durationSeconds, engine: ENGINE, segments };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  };

  return {
    transcribe,
    describe: () =>
      `local pocketsphinx engine (${options.ffmpegPath ?? 'ffmpeg'} → 16 kHz mono → ${found?.pocketsphinx.path ?? options.pocketsphinxPath ?? 'pocketsphinx'}, model ${options.modelDir ?? DEBIAN_MODEL_DIR})`,
    async available(): Promise<TranscriberAvailability> {
      const located = await locate();
      return located.ok ? { ok: true } : { ok: false, reason: located.reason };
    },
    sweepStale: () => sweepStaleTempFiles(tempDir, TEMP_PREFIX),
  };
};
