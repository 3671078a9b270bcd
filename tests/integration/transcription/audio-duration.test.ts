/**
 * The real length of a recording: by ffprobe when installed (skipped without it, unless
 * REQUIRE_LOCAL_TRANSCRIPTION=1), else from a WAV header, which needs no program.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { measureAudioDuration } from '../../../shared/adapters/transcription/audio-duration.ts';
import { isStepError } from '../../../shared/ports/step-error.ts';
import { localTranscriptionRequired, writeSilentWav } from '../../support/speech.ts';
import { tempDir } from '../../support/temp-dir.ts';

const dir = tempDir('audio-duration-test-');
after(() => dir.remove());

const hasFfmpeg =
  !spawnSync('ffprobe', ['-version'], { stdio: 'ignore' }).error &&
  !spawnSync('ffmpeg', ['-version'], { stdio: 'ignore' }).error;
if (!hasFfmpeg && localTranscriptionRequired()) {
  test('ffmpeg and ffprobe are installed (REQUIRE_LOCAL_TRANSCRIPTION=1)', () =>
    assert.fail('ffmpeg/ffprobe not found on PATH (Debian package ffmpeg)'));
}

/** A silent WAV of `seconds` in the test's temp dir. */
const wavFile = (name: string, seconds: number): string => {
  const path = join(dir.path, name);
  writeSilentWav(path, seconds);
  return path;
};

const notAudio = (name: string): string => {
  const path = join(dir.path, name);
  writeFileSync(path, 'definitely not audio\n'.repeat(100));
  return path;
};

const failsWith = async (promise: Promise<unknown>, code: string, retriable: boolean): Promise<string> => {
  const error = await promise.then(
    () => assert.fail('expected a rejection'),
    (e: unknown) => e,
  );
  assert.ok(isStepError(error), String(error));
  assert.equal(error.code, code, error.message);
  assert.equal(error.retriable, retriable);
  return error.message;
};

describe(
  'with ffprobe',
  { skip: hasFfmpeg ? false : 'skipped: ffprobe is not installed (Debian package ffmpeg)' },
  () => {
    test('a WAV file: its exact length', async () => {
      assert.equal(await measureAudioDuration(wavFile('a.wav', 2.25)), 2.25);
    });

    test('a compressed file (3 s of tone as MP3, made by ffmpeg): its length within 10 %', async () => {
      const mp3 = join(dir.path, 'tone.mp3');
      const made = spawnSync('ffmpeg', [
        '-nostdin',
        '-loglevel',
        'error',
        '-f',
        'lavfi',
        '-i',
        'sine=frequency=440:duration=3',
        '-c:a',
        'libmp3lame',
        mp3,
      ]);
      assert.equal(made.status, 0, String(made.stderr));
      const seconds = await measureAudioDuration(mp3);
      assert.ok(Math.abs(seconds - 3) <= 0.3, `measured ${seconds} s`);
    });

    test('a file that is not audio: audio_undecodable (terminal), without the server path', async () => {
      const message = await failsWith(measureAudioDuration(notAudio('notes.mp3')), 'audio_undecodable', false);
      assert.ok(!message.includes(dir.path), message);
    });

    test('a missing file: audio_undecodable (terminal)', async () => {
      await failsWith(measureAudioDuration(join(dir.path, 'gone.mp3')), 'audio_undecodable', false);
    });
  },
);

describe('without ffprobe', () => {
  test('a WAV file: its length from the header', async () => {
    assert.equal(await measureAudioDuration(wavFile('b.wav', 1.5), { ffprobePath: null }), 1.5);
    assert.equal(await measureAudioDuration(wavFile('c.wav', 0.75), { ffprobePath: '/nonexistent/ffprobe' }), 0.75);
  });

  test('anything else: transcription_unavailable (terminal), saying to install ffmpeg', async () => {
    const message = await failsWith(
      measureAudioDuration(notAudio('notes.bin'), { ffprobePath: null }),
      'transcription_unavailable',
      false,
    );
    assert.match(message, /ffprobe \(Debian package ffmpeg\) is not installed/);
  });

  test('a missing file: audio_undecodable (terminal)', async () => {
    await failsWith(
      measureAudioDuration(join(dir.path, 'gone.wav'), { ffprobePath: null }),
      'audio_undecodable',
      false,
    );
  });
});
