/**
 * Which transcriber the configuration gets, and what the unavailable one says. The local branch
 * needs the Debian packages and is covered in tests/integration/transcription; here the local engine
 * is pointed at programs and a model that do not exist, which any machine can check.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLocalTranscriber, pocketsphinxArgs } from '../../../shared/adapters/transcription/local-transcriber.ts';
import { uploadFileName } from '../../../shared/adapters/transcription/openai-transcriber.ts';
import { selectTranscriber } from '../../../shared/adapters/transcription/select-transcriber.ts';
import { isStepError } from '../../../shared/ports/step-error.ts';

const absent = {
  ffmpegPath: '/nonexistent/bin/ffmpeg',
  pocketsphinxPath: '/nonexistent/bin/pocketsphinx_continuous',
  modelDir: '/nonexistent/model/en-us',
};

test('a transcribe URL selects the OpenAI-compatible endpoint, model whisper-1 by default; describe shows no key', () => {
  const transcriber = selectTranscriber(
    { transcribeUrl: ' https://api.openai.com ', transcribeApiKey: 'sk-live-abcdef123456' },
    absent,
  );
  const text = transcriber.describe();
  assert.match(text, /OpenAI-compatible transcriber \(model whisper-1 at https:\/\/api\.openai\.com\)/);
  assert.ok(!text.includes('sk-live-abcdef123456'));
});

test('the configured model is used for the remote endpoint', () => {
  assert.match(
    selectTranscriber({ transcribeUrl: 'http://127.0.0.1:8000', transcribeModel: 'large-v3' }, absent).describe(),
    /model large-v3/,
  );
});

test('a remote endpoint is available without a network round trip (reachability shows per call)', async () => {
  assert.deepEqual(await selectTranscriber({ transcribeUrl: 'http://127.0.0.1:2' }, absent).available(), { ok: true });
});

test('an invalid transcribe URL fails when the service is wired, not on the first call', () => {
  assert.throws(() => selectTranscriber({ transcribeUrl: 'not a url' }, absent), TypeError);
  assert.throws(() => selectTranscriber({ transcribeUrl: 'file:///etc/passwd' }, absent), TypeError);
});

test('no URL and no local engine: available() says exactly what is missing', async () => {
  const availability = await selectTranscriber({ transcribeUrl: '   ' }, absent).available();
  assert.equal(availability.ok, false);
  const { reason } = availability as { reason: string };
  assert.match(reason, /ffmpeg is not installed \(\/nonexistent\/bin\/ffmpeg cannot be run; Debian package ffmpeg\)/);
  assert.match(
    reason,
    /pocketsphinx is not installed \(\/nonexistent\/bin\/pocketsphinx_continuous cannot be run; Debian package pocketsphinx\)/,
  );
  assert.match(
    reason,
    /US English model is not installed \(missing \/nonexistent\/model\/en-us\/en-us\/mdef, .*en-us\.lm\.bin, .*cmudict-en-us\.dict; Debian package pocketsphinx-en-us\)/,
  );
});

test('no URL and no local engine: audio calls fail with transcription_unavailable (terminal) saying how to configure one', async () => {
  const transcriber = selectTranscriber({}, absent);
  assert.match(transcriber.describe(), /no transcription engine/);
  const error = await transcriber.transcribe({ audioPath: '/tmp/call.wav' }).then(
    () => assert.fail('expected a rejection'),
    (e: unknown) => e,
  );
  assert.ok(isStepError(error));
  assert.equal(error.code, 'transcription_unavailable');
  assert.equal(error.retriable, false);
  assert.match(error.message, /ffmpeg is not installed/);
  assert.match(error.message, /apt-get install ffmpeg pocketsphinx pocketsphinx-en-us/);
  assert.match(error.message, /TRANSCRIBE_URL/);
});

test('the local transcriber itself, when its engine is missing, fails the same way', async () => {
  const error = await createLocalTranscriber(absent)
    .transcribe({ audioPath: '/tmp/call.wav' })
    .then(
      () => assert.fail('expected a rejection'),
      (e: unknown) => e,
    );
  assert.ok(isStepError(error));
  assert.equal(error.code, 'transcription_unavailable');
  assert.match(error.message, /pocketsphinx-en-us/);
});

test('an already aborted signal rejects with its reason before anything runs', async () => {
  const reason = new Error('shutdown');
  await assert.rejects(
    selectTranscriber({}, absent).transcribe({ audioPath: '/tmp/call.wav', signal: AbortSignal.abort(reason) }),
    (e) => e === reason,
  );
});

test('pocketsphinx command lines: -infile with word times (-time yes) for 5prealpha (Debian 12), the live command for 5.x', () => {
  const model = { hmm: '/m/en-us', lm: '/m/en-us.lm.bin', dict: '/m/cmudict-en-us.dict' };
  assert.deepEqual(
    pocketsphinxArgs(
      { ffmpeg: 'ffmpeg', pocketsphinx: { path: 'pocketsphinx_continuous', cli: 'continuous' }, model },
      '/t/audio.wav',
    ),
    [
      '-infile',
      '/t/audio.wav',
      '-hmm',
      '/m/en-us',
      '-lm',
      '/m/en-us.lm.bin',
      '-dict',
      '/m/cmudict-en-us.dict',
      '-time',
      'yes',
    ],
  );
  assert.deepEqual(
    pocketsphinxArgs({ ffmpeg: 'ffmpeg', pocketsphinx: { path: 'pocketsphinx', cli: 'live' }, model }, '/t/audio.wav'),
    ['-hmm', '/m/en-us', '-lm', '/m/en-us.lm.bin', '-dict', '/m/cmudict-en-us.dict', 'live', '/t/audio.wav'],
  );
});

test('upload file name: recording.<ext> from the path, else from the content type, else none', () => {
  assert.equal(uploadFileName('/tmp/x/Call 12.MP3'), 'recording.mp3');
  assert.equal(uploadFileName('/tmp/audio-5f2c', 'audio/x-m4a'), 'recording.m4a');
  assert.equal(uploadFileName('/tmp/audio-5f2c', 'audio/ogg; codecs=opus'), 'recording.ogg');
  assert.equal(uploadFileName('/tmp/audio-5f2c', 'application/octet-stream'), 'recording');
  assert.equal(uploadFileName('/tmp/audio-5f2c'), 'recording');
});
