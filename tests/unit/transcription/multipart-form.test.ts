/**
 * The hand-built multipart body, read back by undici's own form parser as a server would read it,
 * and sent by fetch in the case where a FormData body rejected unheard.
 */
import assert from 'node:assert/strict';
import { openAsBlob, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { multipartBody } from '../../../shared/adapters/multipart-form.ts';
import { tempDir } from '../../support/temp-dir.ts';

const parsed = (form: ReturnType<typeof multipartBody>) =>
  new Response(form.body, { headers: { 'content-type': form.contentType } }).formData();

test('text fields and a file part read back as sent, the file with its name and type', async () => {
  const bytes = new Uint8Array([0, 1, 2, 13, 10, 45, 45, 255]); // NUL, CRLF and "--" inside the file
  const form = multipartBody([
    { name: 'file', file: new Blob([bytes], { type: 'audio/wav' }), filename: 'recording.wav' },
    { name: 'model', value: 'whisper-1' },
    { name: 'prompt', value: 'line one\r\nline two ünïcödé' },
  ]);
  assert.match(form.contentType, /^multipart\/form-data; boundary=----call-ingestion-[0-9a-f-]{36}$/);
  const read = await parsed(form);
  const file = read.get('file') as File;
  assert.equal(file.name, 'recording.wav');
  assert.equal(file.type, 'audio/wav');
  assert.deepEqual(new Uint8Array(await file.arrayBuffer()), bytes);
  assert.equal(read.get('model'), 'whisper-1');
  assert.equal(read.get('prompt'), 'line one\r\nline two ünïcödé');
});

test('a file without a type is sent as application/octet-stream', async () => {
  const read = await parsed(multipartBody([{ name: 'file', file: new Blob(['x']), filename: 'recording' }]));
  assert.equal((read.get('file') as File).type, 'application/octet-stream');
});

test('quotes and line breaks in names are percent-encoded in the header and read back as they were', async () => {
  const form = multipartBody([{ name: 'a"b\r\nc', file: new Blob(['x']), filename: 'x"y\nz.wav' }]);
  const text = await form.body.text();
  assert.match(text, /name="a%22b%0D%0Ac"; filename="x%22y%0Az.wav"\r\n/);
  const read = await parsed(form);
  assert.equal((read.get('a"b\r\nc') as File).name, 'x"y\nz.wav');
});

test('the body states its size, so the upload carries a Content-Length', () => {
  const form = multipartBody([{ name: 'model', value: 'whisper-1' }]);
  const boundary = form.contentType.split('boundary=')[1]!;
  const expected = `--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper-1\r\n--${boundary}--\r\n`;
  assert.equal(form.body.size, Buffer.byteLength(expected));
});

test('an upload fetch refuses before it begins leaves no unhandled rejection behind when its signal aborts later', async (t) => {
  // fetch refuses port 9 (a blocked port) before sending anything; the caller's signal aborts
  // afterwards (a shutdown). A FormData body holding a file rejected, unheard, in exactly this
  // case, and an unhandled rejection ends a Node process.
  const dir = tempDir();
  t.after(() => dir.remove());
  const path = join(dir.path, 'recording.wav');
  writeFileSync(path, Buffer.alloc(200_000, 1));
  const unheard: unknown[] = [];
  const listen = (reason: unknown) => unheard.push(reason);
  process.on('unhandledRejection', listen);
  try {
    for (let i = 0; i < 5; i++) {
      const form = multipartBody([
        { name: 'file', file: await openAsBlob(path, { type: 'audio/wav' }), filename: 'recording.wav' },
        { name: 'model', value: 'whisper-1' },
      ]);
      const controller = new AbortController();
      await assert.rejects(
        fetch('http://127.0.0.1:9/v1/audio/transcriptions', {
          method: 'POST',
          headers: { 'content-type': form.contentType },
          body: form.body,
          signal: controller.signal,
        }),
        (error: Error) => /bad port/.test(String((error.cause as Error | undefined)?.message)),
      );
      controller.abort(new Error('shutting down'));
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  } finally {
    process.off('unhandledRejection', listen);
  }
  assert.deepEqual(unheard.map(String), []);
});
