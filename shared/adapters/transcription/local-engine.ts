/**
 * Finds the programs and model files of the local engine and says exactly what is missing.
 *
 * pocketsphinx comes in two command-line shapes: `pocketsphinx [options] live FILE` (5.x, JSON lines
 * on stdout) and `pocketsphinx_continuous -infile FILE [options]` (5prealpha, the one Debian 12
 * bookworm ships in the `pocketsphinx` package). Without an explicit path the first found on PATH
 * is used, 5.x first; with a path, a file name containing `continuous` means the 5prealpha shape.
 * Programs are found by starting them (`ffmpeg -version`), so PATH is the process's own and this
 * module reads no environment.
 */
import { existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import { canRun, canRunSync } from './run-process.ts';

/** Where Debian's `pocketsphinx-en-us` package puts the US English model. */
export const DEBIAN_MODEL_DIR = '/usr/share/pocketsphinx/model/en-us';

export interface LocalEngineOptions {
  /** The ffmpeg program; default `ffmpeg` on PATH. */
  ffmpegPath?: string | undefined;
  /** The pocketsphinx program; default `pocketsphinx` (5.x), else `pocketsphinx_continuous` (5prealpha), on PATH. */
  pocketsphinxPath?: string | undefined;
  /** Directory holding `en-us/` (acoustic model), `en-us.lm.bin` and `cmudict-en-us.dict`; default `DEBIAN_MODEL_DIR`. */
  modelDir?: string | undefined;
}

export type PocketsphinxCli = 'live' | 'continuous';

/** Everything the local engine runs, found and checked. */
export interface LocalEngine {
  ffmpeg: string;
  pocketsphinx: { path: string; cli: PocketsphinxCli };
  model: { hmm: string; lm: string; dict: string };
}

export type LocalEngineDetection = { ok: true; engine: LocalEngine } | { ok: false; reason: string };

const cliOf = (path: string): PocketsphinxCli => (/continuous/.test(basename(path)) ? 'continuous' : 'live');

/** Arguments that make each program start and stop at once without reading anything. */
const probeArgs = (program: string, kind: 'ffmpeg' | 'pocketsphinx'): string[] =>
  kind === 'ffmpeg' ? ['-version'] : cliOf(program) === 'live' ? ['help'] : [];

const plan = (options: LocalEngineOptions) => {
  const ffmpeg = options.ffmpegPath ?? 'ffmpeg';
  const pocketsphinx = options.pocketsphinxPath
    ? [options.pocketsphinxPath]
    : ['pocketsphinx', 'pocketsphinx_continuous'];
  const modelDir = options.modelDir ?? DEBIAN_MODEL_DIR;
  const model = {
    hmm: join(modelDir, 'en-us'),
    lm: join(modelDir, 'en-us.lm.bin'),
    dict: join(modelDir, 'cmudict-en-us.dict'),
  };
  return { ffmpeg, pocketsphinx, model };
};

/** `ffmpeg is not on PATH`, `/opt/ffmpeg does not exist`, `neither pocketsphinx nor pocketsphinx_continuous is on PATH`. */
const notFound = (programs: string[]): string => {
  const paths = programs.filter((p) => p.includes('/'));
  if (paths.length > 0) return `${paths.join(', ')} cannot be run`;
  return programs.length === 1 ? `${programs[0]} is not on PATH` : `neither ${programs.join(' nor ')} is on PATH`;
};

const conclude = (
  options: LocalEngineOptions,
  ffmpegFound: boolean,
  pocketsphinxFound: string | undefined,
): LocalEngineDetection => {
  const { ffmpeg, pocketsphinx, model } = plan(options);
  const missing: string[] = [];
  if (!ffmpegFound) missing.push(`ffmpeg is not installed (${notFound([ffmpeg])}; Debian package ffmpeg)`);
  if (!pocketsphinxFound)
    missing.push(`pocketsphinx is not installed (${notFound(pocketsphinx)}; Debian package pocketsphinx)`);
  const absent = [join(model.hmm, 'mdef'), model.lm, model.dict].filter((file) => !existsSync(file));
  if (absent.length > 0)
    missing.push(
      `the pocketsphinx US English model is not installed (missing ${absent.join(', ')}; Debian package pocketsphinx-en-us)`,
    );
  if (missing.length > 0 || pocketsphinxFound === undefined)
    return { ok: false, reason: `The local transcription engine is not available: ${missing.join('; ')}.` };
  return {
    ok: true,
    engine: { ffmpeg, pocketsphinx: { path: pocketsphinxFound, cli: cliOf(pocketsphinxFound) }, model },
  };
};

/** Finds the local engine; never rejects. */
export const detectLocalEngine = async (options: LocalEngineOptions = {}): Promise<LocalEngineDetection> => {
  const { ffmpeg, pocketsphinx } = plan(options);
  const [ffmpegFound, ...found] = await Promise.all([
    canRun(ffmpeg, probeArgs(ffmpeg, 'ffmpeg')),
    ...pocketsphinx.map((p) => canRun(p, probeArgs(p, 'pocketsphinx'))),
  ]);
  return conclude(
    options,
    ffmpegFound ?? false,
    pocketsphinx.find((_, i) => found[i]),
  );
};

/** `detectLocalEngine`, blocking (a few ms per program): for choosing an adapter while the service is wired. */
export const detectLocalEngineSync = (options: LocalEngineOptions = {}): LocalEngineDetection => {
  const { ffmpeg, pocketsphinx } = plan(options);
  return conclude(
    options,
    canRunSync(ffmpeg, probeArgs(ffmpeg, 'ffmpeg')),
    pocketsphinx.find((p) => canRunSync(p, probeArgs(p, 'pocketsphinx'))),
  );
};
