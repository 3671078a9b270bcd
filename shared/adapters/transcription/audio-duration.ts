/**
 * The real length of a recording, in seconds: by `ffprobe` (part of the ffmpeg package) when it is
 * installed, else from the header of an uncompressed WAV file (PCM, float, A-law, µ-law), which needs
 * no program at all.
 *
 * ffprobe opens the recording as `ffmpeg-input.ts` says: a local file only, real containers only.
 */
import { open, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { StepError } from '../../ports/step-error.ts';
import { TRANSCRIPTION_SETUP_HINT } from '../../ports/transcriber.ts';
import { ffmpegInput } from './ffmpeg-input.ts';
import { lastLine, runProcess } from './run-process.ts';

/** WAV `fmt ` codes whose duration follows from the data size: PCM, IEEE float, A-law, µ-law. */
const CONSTANT_RATE_FORMATS = new Set([1, 3, 6, 7]);
const WAVE_FORMAT_EXTENSIBLE = 0xfffe;
const UNKNOWN_SIZE = 0xffffffff;
/** How much of a file is read to find the `data` chunk; metadata chunks before it are small. */
const HEADER_BYTES = 256 * 1024;

const ascii = (bytes: Uint8Array, at: number): string => String.fromCharCode(...bytes.subarray(at, at + 4));

/**
 * Duration in seconds of an uncompressed WAV file, from its first bytes and its size; `undefined`
 * when the bytes are not a RIFF/WAVE file with a constant-rate format, or its `data` chunk starts
 * beyond `header`. A data size larger than the file (a truncated recording) or marked unknown
 * (0xFFFFFFFF, or 0 in a stream whose RIFF size is unknown too) counts the bytes actually present.
 */
export const parseWavDuration = (header: Uint8Array, fileSize: number): number | undefined => {
  if (header.byteLength < 12 || ascii(header, 0) !== 'RIFF' || ascii(header, 8) !== 'WAVE') return undefined;
  const view = new DataView(header.buffer, header.byteOffset, header.byteLength);
  const riffSize = view.getUint32(4, true);
  let format: { code: number; sampleRate: number; blockAlign: number } | undefined;
  let offset = 12;
  while (offset + 8 <= header.byteLength) {
    const id = ascii(header, offset);
    const size = view.getUint32(offset + 4, true);
    const body = offset + 8;
    if (id === 'fmt ') {
      if (body + 16 > header.byteLength || size < 16) return undefined;
      let code = view.getUint16(body, true);
      if (code === WAVE_FORMAT_EXTENSIBLE) {
        if (size < 26 || body + 26 > header.byteLength) return undefined;
        code = view.getUint16(body + 24, true); // first two bytes of the SubFormat GUID
      }
      format = { code, sampleRate: view.getUint32(body + 4, true), blockAlign: view.getUint16(body + 12, true) };
    } else if (id === 'data') {
      if (!format || !CONSTANT_RATE_FORMATS.has(format.code) || format.sampleRate === 0 || format.blockAlign === 0)
        return undefined;
      const present = Math.max(0, fileSize - body);
      const streamed = size === UNKNOWN_SIZE || (size === 0 && (riffSize === 0 || riffSize === UNKNOWN_SIZE));
      const bytes = streamed ? present : Math.min(size, present);
      return Math.floor(bytes / format.blockAlign) / format.sampleRate;
    }
    offset = body + size + (size % 2); // chunks are padded to an even size
  }
  return undefined;
};

/** `parseWavDuration` of a file; `undefined` when it is not such a WAV file or cannot be read. */
export const readWavDuration = async (path: string): Promise<number | undefined> => {
  try {
    const handle = await open(path, 'r');
    try {
      const { size } = await handle.stat();
      const buffer = Buffer.alloc(Math.min(size, HEADER_BYTES));
      const { bytesRead } = await handle.read(buffer, 0, buffer.byteLength, 0);
      return parseWavDuration(buffer.subarray(0, bytesRead), size);
    } finally {
      await handle.close();
    }
  } catch {
    return undefined;
  }
};

export interface MeasureOptions {
  /** The ffprobe program; default `ffprobe` on PATH. `null` skips it (WAV header only). */
  ffprobePath?: string | null;
  /** Deadline of the ffprobe run; default 60 s. */
  timeoutMs?: number;
  signal?: AbortSignal | undefined;
}

/**
 * The real length of the recording at `path`, in seconds.
 * @throws StepError `audio_undecodable` (terminal) when ffprobe cannot read it, or it is missing.
 * @throws StepError `transcription_unavailable` (terminal) when ffprobe is not installed and the
 *   file is not an uncompressed WAV, so its length cannot be known here.
 * @throws StepError `transcription_failed` / `transcription_timeout` (retriable) when ffprobe
 *   crashes or hangs.
 * @throws the signal's reason when `signal` aborts.
 */
export const measureAudioDuration = async (path: string, options: MeasureOptions = {}): Promise<number> => {
  const absolute = resolve(path);
  const input = ffmpegInput(absolute);
  const ffprobe = options.ffprobePath === undefined ? 'ffprobe' : options.ffprobePath;
  let probed = false;
  if (ffprobe !== null) {
    const outcome = await runProcess(
      ffprobe,
      ['-v', 'error', '-show_entries', 'format=duration', '-of', 'default=noprint_wrappers=1:nokey=1', ...input.args],
      { timeoutMs: options.timeoutMs ?? 60_000, signal: options.signal, maxStdoutBytes: 64 * 1024 },
    );
    switch (outcome.kind) {
      case 'exited': {
        const seconds = Number.parseFloat(outcome.stdout.trim().split(/\s+/)[0] ?? '');
        if (outcome.exitCode === 0 && Number.isFinite(seconds) && seconds >= 0) return seconds;
        if (outcome.exitCode !== 0) {
          const why = (lastLine(outcome.stderr) ?? `exit code ${outcome.exitCode}`)
            .split(input.url)
            .join('the recording');
          throw new StepError(
            'audio_undecodable',
            `The recording is not audio that can be read (ffprobe: ${why}).`,
            false,
          );
        }
        probed = true; // readable, but the container states no length: the WAV header may still tell
        break;
      }
      case 'missing':
        break;
      case 'aborted':
        throw outcome.reason;
      case 'timeout':
        throw new StepError(
          'transcription_timeout',
          'Measuring the length of the recording (ffprobe) took too long.',
          true,
        );
      case 'signalled':
        throw new StepError(
          'transcription_failed',
          `ffprobe was killed by ${outcome.signal} while measuring the recording.`,
          true,
        );
      case 'failed':
        throw new StepError('transcription_failed', `ffprobe could not be run: ${outcome.error.message}`, true, {
          cause: outcome.error,
        });
    }
  }
  const fromHeader = await readWavDuration(absolute);
  if (fromHeader !== undefined) return fromHeader;
  const exists = await stat(absolute).then(
    (s) => s.isFile(),
    () => false,
  );
  if (!exists) throw new StepError('audio_undecodable', 'The recording file cannot be read.', false);
  if (probed)
    throw new StepError(
      'audio_undecodable',
      'The recording does not state its length (ffprobe reads it but reports no duration).',
      false,
    );
  throw new StepError(
    'transcription_unavailable',
    `The length of the recording cannot be measured: it is not an uncompressed WAV file and ffprobe (Debian package ffmpeg) is not installed. ${TRANSCRIPTION_SETUP_HINT}`,
    false,
  );
};

/** Recordings are at most 4 hours long unless `AUDIO_MAX_SECONDS` says otherwise. */
export const DEFAULT_AUDIO_MAX_SECONDS = 4 * 3600;

const clock = (seconds: number): string => {
  const whole = Math.round(seconds);
  const [h, m, s] = [Math.floor(whole / 3600), Math.floor((whole % 3600) / 60), whole % 60];
  return h > 0 ? `${h} h ${m} min` : m > 0 ? `${m} min ${s} s` : `${s} s`;
};

/** `audio_too_long` (terminal): `seconds` (when known) is over the cap of `maxSeconds`. */
export const audioTooLong = (maxSeconds: number, seconds?: number): StepError =>
  new StepError(
    'audio_too_long',
    seconds === undefined
      ? `The recording is longer than the ${clock(maxSeconds)} limit.`
      : `The recording lasts ${clock(seconds)}, longer than the ${clock(maxSeconds)} limit.`,
    false,
  );

/**
 * The length the recording's container states, read by ffprobe without decoding it (a FLAC or MP3
 * header is enough), or `undefined` when it cannot be told so: ffprobe missing, failing or silent.
 * Decoding, bounded on its own, then decides. Rejects only with the signal's reason.
 */
export const probeAudioSeconds = async (path: string, options: MeasureOptions = {}): Promise<number | undefined> => {
  if (options.ffprobePath === null) return undefined;
  const input = ffmpegInput(resolve(path));
  const outcome = await runProcess(
    options.ffprobePath ?? 'ffprobe',
    ['-v', 'error', '-show_entries', 'format=duration', '-of', 'default=noprint_wrappers=1:nokey=1', ...input.args],
    { timeoutMs: options.timeoutMs ?? 60_000, signal: options.signal, maxStdoutBytes: 64 * 1024 },
  );
  if (outcome.kind === 'aborted') throw outcome.reason;
  if (outcome.kind !== 'exited' || outcome.exitCode !== 0) return undefined;
  const seconds = Number.parseFloat(outcome.stdout.trim().split(/\s+/)[0] ?? '');
  return Number.isFinite(seconds) && seconds >= 0 ? seconds : undefined;
};
