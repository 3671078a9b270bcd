/**
 * AUDIO_MAX_SECONDS: a recording longer than the cap fails with `audio_too_long` (terminal) before
 * it is decoded when its container states its length, and is cut a second past the cap while
 * decoding when it does not. A 2 MB FLAC of 3 hours of silence would otherwise decode to a 346 MB WAV.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { detectLocalEngine } from '../../../shared/adapters/transcription/local-engine.ts';
import { createLocalTranscriber } from '../../../shared/adapters/transcription/local-transcriber.ts';
import { isStepError } from '../../../shared/ports/step-error.ts';
import { localTranscriptionRequired } from '../../support/speech.ts';
import { tempDir } from '../../support/temp-dir.ts';

const engine = await detectLocalEngine();
const skip = engine.ok ? undefined : localTranscriptionRequired() ? undefined : engine.reason;

/** Silence encoded as FLAC by ffmpeg; `piped` writes it as a stream, whose header states no length. */
const silentFlac = (path: string, seconds: number, { piped = false } = {}) => {
  const args = [
    '-nostdin',
    '-hide_banner',
    '-loglevel',
    'error',
    '-f',
    'lavfi',
    '-i',
    'anullsrc=r=16000:cl=mono',
    '-t',
    String(seconds),
    '-c:a',
    'flac',
    '-f',
    'flac',
  ];
  const result = spawnSync('ffmpeg', piped ? [...args, '-'] : [...args, '-y', path], { maxBuffer: 64 * 1024 * 1024 });
  assert.equal(result.status, 0, String(result.stderr));
  if (piped) writeFileSync(path, result.stdout);
};

const tooLong = async (promise: Promise<unknown>) => {
  const error = await promise.then(
    () => assert.fail('expected audio_too_long'),
    (e: unknown) => e,
  );
  assert.ok(isStepError(error), String(error));
  assert.equal(error.code, 'audio_too_long', error.message);
  assert.equal(error.retriable, false);
  return error;
};

test(
  'a 2 MB FLAC of 3 h of silence over a 2 h cap fails with audio_too_long before anything is decoded',
  { skip },
  async (t) => {
    const dir = tempDir();
    t.after(dir.remove);
    const flac = join(dir.path, 'silence.flac');
    silentFlac(flac, 3 * 3600);
    const transcriber = createLocalTranscriber({ tempDir: dir.path, maxSeconds: 2 * 3600 });
    const started = Date.now();
    const error = await tooLong(transcriber.transcribe({ audioPath: flac }));
    const elapsed = Date.now() - started;
    console.log(`# ${statSync(flac).size}-byte FLAC of 3 h: ${error.message} (${elapsed} ms)`);
    assert.equal(error.message, 'The recording lasts 3 h 0 min, longer than the 2 h 0 min limit.');
    assert.deepEqual(
      readdirSync(dir.path).filter((name) => name.startsWith('transcribe-')),
      [],
      'no temp directory: nothing was decoded',
    );
    assert.ok(elapsed < 10_000, `took ${elapsed} ms`);
  },
);

test(
  'a recording that states no length is cut while decoding, a second past the cap, and fails with audio_too_long',
  { skip },
  async (t) => {
    const dir = tempDir();
    t.after(dir.remove);
    const flac = join(dir.path, 'streamed.flac');
    silentFlac(flac, 20 * 60, { piped: true });
    const probed = spawnSync(
      'ffprobe',
      ['-v', 'error', '-show_entries', 'format=duration', '-of', 'default=noprint_wrappers=1:nokey=1', flac],
      { encoding: 'utf8' },
    );
    assert.equal(probed.stdout.trim(), 'N/A', 'the container states no length');
    const transcriber = createLocalTranscriber({ tempDir: dir.path, maxSeconds: 600 });
    const started = Date.now();
    const error = await tooLong(transcriber.transcribe({ audioPath: flac }));
    console.log(`# 20 min FLAC without a stated length, 10 min cap: ${error.message} (${Date.now() - started} ms)`);
    assert.equal(error.message, 'The recording is longer than the 10 min 0 s limit.');
    assert.deepEqual(
      readdirSync(dir.path).filter((name) => name.startsWith('transcribe-')),
      [],
      'the temp directory is removed',
    );
  },
);

test('a recording within the cap is transcribed as before', { skip }, async (t) => {
  const dir = tempDir();
  t.after(dir.remove);
  const flac = join(dir.path, 'short.flac');
  silentFlac(flac, 5);
  const transcription = await createLocalTranscriber({ tempDir: dir.path, maxSeconds: 5 }).transcribe({
    audioPath: flac,
  });
  assert.equal(transcription.durationSeconds, 5);
});
