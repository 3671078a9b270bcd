/**
 * Speech the tests make themselves: espeak-ng (Debian package espeak-ng) writes a sentence to a WAV
 * file, so the local transcription engine can be tested end to end without recordings in the repo.
 *
 * pocketsphinx hears espeak-ng's default voice badly (“hello this is a test of the pricing proposal”
 * comes back as “our lease is up to stop eating a little”), but its Klatt voices well: with
 * `en-us+klatt5` at 140 words per minute `SPEECH_SAMPLE` comes back as “hello this is a test of a
 * price proposal” — all four key words — and every Klatt voice from 135 to 160 wpm gave at least three.
 * Both programs are deterministic, so the same packages give the same words every run.
 */
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { detectLocalEngine } from '../../shared/adapters/transcription/local-engine.ts';

/** The voice pocketsphinx recognises best among espeak-ng's (see above). */
export const SPEECH_VOICE = 'en-us+klatt5';
export const SPEECH_WORDS_PER_MINUTE = 140;

/** A sentence the local engine reliably recognises, and the words a test should find in its transcript. */
export const SPEECH_SAMPLE = {
  text: 'hello this is a test of the new price proposal',
  keyWords: ['hello', 'test', 'price', 'proposal'],
} as const;

/** Whether the `espeak-ng` program can be started. */
export const hasEspeak = (): boolean => {
  const result = spawnSync('espeak-ng', ['--version'], { stdio: 'ignore', timeout: 10_000 });
  return !result.error;
};

/** Speaks `text` into a WAV file at `path` (22 050 Hz mono 16-bit PCM). The text goes on stdin, never parsed as options. */
export const synthesizeSpeech = (
  text: string,
  path: string,
  options: { voice?: string; wordsPerMinute?: number } = {},
): Promise<void> =>
  new Promise((resolve, reject) => {
    const child = spawn(
      'espeak-ng',
      [
        '-v',
        options.voice ?? SPEECH_VOICE,
        '-s',
        String(options.wordsPerMinute ?? SPEECH_WORDS_PER_MINUTE),
        '--stdin',
        '-w',
        path,
      ],
      {
        stdio: ['pipe', 'ignore', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`espeak-ng exited with ${code}: ${stderr.trim()}`)),
    );
    child.stdin.end(text);
  });

/** What the local transcription tests need and this machine lacks, in one line; `undefined` when nothing. */
export const missingForLocalTranscription = async (): Promise<string | undefined> => {
  const missing: string[] = [];
  const engine = await detectLocalEngine();
  if (!engine.ok) missing.push(engine.reason);
  if (!hasEspeak()) missing.push('espeak-ng is not installed (Debian package espeak-ng).');
  return missing.length > 0 ? missing.join(' ') : undefined;
};

/** CI sets REQUIRE_LOCAL_TRANSCRIPTION=1 so a missing engine fails the run instead of skipping tests. */
export const localTranscriptionRequired = (): boolean => process.env.REQUIRE_LOCAL_TRANSCRIPTION === '1';

/** Writes a silent 16-bit mono PCM WAV of `seconds` (44-byte header, then zero samples); no program needed. */
export const writeSilentWav = (path: string, seconds: number, sampleRate = 8000): void => {
  const data = Buffer.alloc(Math.round(sampleRate * seconds) * 2);
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'ascii');
  header.writeUInt32LE(36 + data.byteLength, 4);
  header.write('WAVEfmt ', 8, 'ascii');
  header.writeUInt32LE(16, 16); // fmt chunk size
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(sampleRate, 24);
  header.writeUInt32LE(sampleRate * 2, 28); // byte rate
  header.writeUInt16LE(2, 32); // block align
  header.writeUInt16LE(16, 34); // bits per sample
  header.write('data', 36, 'ascii');
  header.writeUInt32LE(data.byteLength, 40);
  writeFileSync(path, Buffer.concat([header, data]));
};
