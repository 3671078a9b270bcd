/**
 * The local engine (ffmpeg → 16 kHz mono WAV → pocketsphinx) end to end on speech the test makes
 * with espeak-ng: real programs, real audio, no network.
 *
 * Needs the Debian packages ffmpeg, pocketsphinx, pocketsphinx-en-us and espeak-ng. Without them the
 * suite is skipped with one line saying what is missing — unless REQUIRE_LOCAL_TRANSCRIPTION=1 (CI),
 * which turns the skip into a failure.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createLocalTranscriber } from '../../../shared/adapters/transcription/local-transcriber.ts';
import { selectTranscriber } from '../../../shared/adapters/transcription/select-transcriber.ts';
import { isStepError, type StepError } from '../../../shared/ports/step-error.ts';
import type { Transcription } from '../../../shared/ports/transcriber.ts';
import {
  localTranscriptionRequired,
  missingForLocalTranscription,
  SPEECH_SAMPLE,
  synthesizeSpeech,
  writeSilentWav,
} from '../../support/speech.ts';
import { tempDir } from '../../support/temp-dir.ts';

const missing = await missingForLocalTranscription();
if (missing && localTranscriptionRequired()) {
  test('the local transcription engine and espeak-ng are installed (REQUIRE_LOCAL_TRANSCRIPTION=1)', () =>
    assert.fail(missing));
}

/** ffprobe's length of a file: a second opinion, independent of how the adapter measures. */
const ffprobeSeconds = (path: string): number => {
  const out = spawnSync(
    'ffprobe',
    ['-v', 'error', '-show_entries', 'format=duration', '-of', 'default=noprint_wrappers=1:nokey=1', path],
    { encoding: 'utf8' },
  );
  return Number.parseFloat(out.stdout);
};

const keyWordsHeard = (text: string): string[] => {
  const words = new Set(text.toLowerCase().split(/[^a-z']+/));
  return SPEECH_SAMPLE.keyWords.filter((word) => words.has(word));
};

const rejection = async (promise: Promise<unknown>): Promise<unknown> => {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail('expected the transcription to fail');
};

const stepError = async (promise: Promise<unknown>, code: string, retriable: boolean): Promise<StepError> => {
  const error = await rejection(promise);
  assert.ok(isStepError(error), `expected a StepError, got ${String(error)}`);
  assert.equal(error.code, code, error.message);
  assert.equal(error.retriable, retriable);
  return error;
};

describe(
  'local transcriber: ffmpeg + pocketsphinx on speech made by espeak-ng',
  { skip: missing ? `skipped: ${missing}` : false },
  () => {
    const dir = tempDir('transcription-test-');
    const speechWav = join(dir.path, 'speech.wav');
    const speechMp3 = join(dir.path, 'speech.mp3');
    /** The transcriber's temp dir, to check it leaves nothing behind. */
    const work = join(dir.path, 'work');
    const transcriber = createLocalTranscriber({ tempDir: work });
    let wavResult: Promise<{ result: Transcription; ms: number }>;

    before(async () => {
      mkdirSync(work);
      await synthesizeSpeech(SPEECH_SAMPLE.text, speechWav);
      const mp3 = spawnSync('ffmpeg', [
        '-nostdin',
        '-loglevel',
        'error',
        '-i',
        speechWav,
        '-c:a',
        'libmp3lame',
        '-b:a',
        '64k',
        speechMp3,
      ]);
      assert.equal(mp3.status, 0, String(mp3.stderr));
      const started = performance.now();
      wavResult = transcriber
        .transcribe({ audioPath: speechWav, contentType: 'audio/wav' })
        .then((result) => ({ result, ms: performance.now() - started }));
      wavResult.catch(() => {}); // observed by the tests below
    });
    after(() => dir.remove());

    test('the transcript of spoken words contains at least 3 of the 4 key words', async (t) => {
      const { result, ms } = await wavResult;
      t.diagnostic(
        `heard "${result.text}" in ${Math.round(ms)} ms for ${result.durationSeconds.toFixed(2)} s of audio`,
      );
      const heard = keyWordsHeard(result.text);
      assert.ok(
        heard.length >= 3,
        `heard only [${heard.join(', ')}] of [${SPEECH_SAMPLE.keyWords.join(', ')}] in "${result.text}"`,
      );
      assert.equal(result.engine, 'pocketsphinx');
    });

    test('durationSeconds is the real length of the audio (within 10 %)', async () => {
      const { result } = await wavResult;
      const real = ffprobeSeconds(speechWav);
      assert.ok(real > 1, `the spoken sample should last over a second, ffprobe says ${real}`);
      assert.ok(
        Math.abs(result.durationSeconds - real) <= real * 0.1,
        `measured ${result.durationSeconds} s, ffprobe says ${real} s`,
      );
    });

    test('a compressed recording (MP3) is decoded by ffmpeg and transcribed the same way', async () => {
      const result = await transcriber.transcribe({ audioPath: speechMp3, contentType: 'audio/mpeg' });
      const heard = keyWordsHeard(result.text);
      assert.ok(heard.length >= 3, `heard only [${heard.join(', ')}] in "${result.text}"`);
      const real = ffprobeSeconds(speechWav);
      assert.ok(
        Math.abs(result.durationSeconds - real) <= real * 0.1,
        `measured ${result.durationSeconds} s for ${real} s of speech`,
      );
    });

    test('a recording without speech gives an empty transcript and its real length', async () => {
      const silent = join(dir.path, 'silence.wav');
      writeSilentWav(silent, 2.5);
      const result = await transcriber.transcribe({ audioPath: silent });
      assert.equal(result.text, '');
      assert.equal(result.durationSeconds, 2.5);
    });

    test('a file that is not audio fails with audio_undecodable (terminal), naming no server path', async () => {
      const notAudio = join(dir.path, 'notes.wav');
      writeFileSync(notAudio, 'these are meeting notes, not a recording\n'.repeat(50));
      const error = await stepError(
        transcriber.transcribe({ audioPath: notAudio, contentType: 'audio/wav' }),
        'audio_undecodable',
        false,
      );
      assert.doesNotMatch(error.message, new RegExp(dir.path));
    });

    test('a playlist posing as audio is refused (audio_undecodable): ffmpeg neither fetches its URLs nor reads other local files', async () => {
      // Another file on the server, in a format playlists may name: without the container whitelist
      // ffmpeg would decode it and the call would get its transcript.
      const segment = join(dir.path, 'other-call.ts');
      const made = spawnSync('ffmpeg', [
        '-nostdin',
        '-loglevel',
        'error',
        '-i',
        speechWav,
        '-c:a',
        'mp2',
        '-f',
        'mpegts',
        segment,
      ]);
      assert.equal(made.status, 0, String(made.stderr));
      const hits: string[] = [];
      const server = createServer((req, res) => {
        hits.push(req.url ?? '');
        res.end();
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const { port } = server.address() as AddressInfo;
        for (const target of [segment, `http://127.0.0.1:${port}/segment.ts`]) {
          const playlist = join(dir.path, 'call.mp3');
          writeFileSync(playlist, `#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:3.3,\n${target}\n#EXT-X-ENDLIST\n`);
          await stepError(
            transcriber.transcribe({ audioPath: playlist, contentType: 'audio/mpeg' }),
            'audio_undecodable',
            false,
          );
        }
        assert.deepEqual(hits, []);
      } finally {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    });

    test('a missing file fails with audio_undecodable (terminal)', async () => {
      await stepError(transcriber.transcribe({ audioPath: join(dir.path, 'gone.mp3') }), 'audio_undecodable', false);
    });

    test('past the deadline the programs are stopped: transcription_timeout (retriable)', async () => {
      const hurried = createLocalTranscriber({ tempDir: work, timeoutMs: 300 });
      const started = performance.now();
      await stepError(hurried.transcribe({ audioPath: speechWav }), 'transcription_timeout', true);
      assert.ok(performance.now() - started < 2_000, 'the deadline did not stop the work promptly');
    });

    test("an aborted signal stops the work and rejects with the signal's reason, not a StepError", async () => {
      const controller = new AbortController();
      const reason = new Error('shutting down');
      const pending = transcriber.transcribe({ audioPath: speechWav, signal: controller.signal });
      setTimeout(() => controller.abort(reason), 200);
      assert.equal(await rejection(pending), reason);
    });

    test('no temp file is left behind, whatever the outcome', async () => {
      await wavResult;
      await rejection(transcriber.transcribe({ audioPath: join(dir.path, 'gone.mp3') }));
      assert.deepEqual(readdirSync(work), []);
    });

    test('selectTranscriber picks the local engine when no URL is set and it is installed', async () => {
      const selected = selectTranscriber({});
      assert.deepEqual(await selected.available(), { ok: true });
      assert.match(selected.describe(), /pocketsphinx/);
      const result = await selected.transcribe({ audioPath: speechWav });
      assert.ok(keyWordsHeard(result.text).length >= 3, result.text);
    });
  },
);
