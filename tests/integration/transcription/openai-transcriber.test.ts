/**
 * The OpenAI-compatible transcriber against a real HTTP server on 127.0.0.1 that speaks the
 * `/v1/audio/transcriptions` shape: it parses the multipart form as a server would, and each test
 * says how it answers and checks what the adapter sent and made of the answer.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, beforeEach, test } from 'node:test';
import { createOpenAiTranscriber } from '../../../shared/adapters/transcription/openai-transcriber.ts';
import { isStepError, type StepError } from '../../../shared/ports/step-error.ts';
import { writeSilentWav } from '../../support/speech.ts';
import { tempDir } from '../../support/temp-dir.ts';

const API_KEY = 'sk-test-0f9e8d7c6b5a4b3c';

interface Seen {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  /** The multipart form, parsed by undici like any server would; undefined when it is not one. */
  form: FormData | undefined;
}
type Responder = (req: Seen, res: ServerResponse) => void;

let server: ReturnType<typeof createServer>;
let baseUrl: string;
let respond: Responder;
let seen: Seen[] = [];
const dir = tempDir('openai-transcriber-test-');

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};

/** What the OpenAI endpoint checks before transcribing: a `file` part with content and a `model`. */
const validRequest = (req: Seen): string | undefined => {
  const file = req.form?.get('file');
  if (!(file instanceof Blob) || file.size === 0) return "Missing required parameter: 'file'.";
  if (typeof req.form?.get('model') !== 'string') return "Missing required parameter: 'model'.";
  return undefined;
};

/** A silent WAV of `seconds` in the test's temp dir. */
const silentWav = (name: string, seconds: number): string => {
  const path = join(dir.path, name);
  writeSilentWav(path, seconds);
  return path;
};

let recording: string;

before(async () => {
  recording = silentWav('call.wav', 1.75);
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => void answer());
    const answer = async () => {
      const contentType = req.headers['content-type'] ?? '';
      const form = contentType.startsWith('multipart/form-data')
        ? await new Response(Buffer.concat(chunks), { headers: { 'content-type': contentType } })
            .formData()
            .catch(() => undefined)
        : undefined;
      const entry: Seen = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, form };
      seen.push(entry);
      if (entry.method !== 'POST' || entry.path !== '/v1/audio/transcriptions')
        return json(res, 404, { detail: 'Not Found' });
      const problem = validRequest(entry);
      if (problem) return json(res, 400, { error: { message: problem, type: 'invalid_request_error' } });
      respond(entry, res);
    };
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  dir.remove();
});
beforeEach(() => {
  seen = [];
  respond = (_req, res) =>
    json(res, 200, {
      task: 'transcribe',
      language: 'english',
      duration: 12.5,
      text: ' Hello, this is Dana from Acme. ',
      segments: [],
    });
});

const transcriber = (overrides: Partial<Parameters<typeof createOpenAiTranscriber>[0]> = {}) =>
  createOpenAiTranscriber({ url: baseUrl, apiKey: API_KEY, timeoutMs: 2_000, ...overrides });

const rejection = async (promise: Promise<unknown>): Promise<unknown> => {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail('expected the transcription to fail');
};

/** Rejects with a StepError of this code and retriability whose text never holds the API key. */
const rejectsWith = async (
  promise: Promise<unknown>,
  code: string,
  retriable: boolean,
  message?: RegExp,
): Promise<StepError> => {
  const error = await rejection(promise);
  assert.ok(isStepError(error), `expected a StepError, got ${String(error)}`);
  assert.equal(error.code, code, error.message);
  assert.equal(error.retriable, retriable, error.message);
  assert.ok(!error.message.includes(API_KEY), `the API key leaked into: ${error.message}`);
  if (message) assert.match(error.message, message);
  return error;
};

test('200: the transcript and duration come from the verbose_json answer', async () => {
  const result = await transcriber().transcribe({ audioPath: recording, contentType: 'audio/wav' });
  assert.deepEqual(result, {
    text: 'Hello, this is Dana from Acme.',
    durationSeconds: 12.5,
    engine: 'openai:whisper-1',
  });
});

test('200: the verbose_json segments are kept as timed segments (text trimmed, speaker when the server names one, odd entries skipped)', async () => {
  respond = (_req, res) =>
    json(res, 200, {
      task: 'transcribe',
      duration: 9.5,
      text: ' Hi Dana. Hi Sam, thanks. ',
      segments: [
        {
          id: 0,
          seek: 0,
          start: 0.0,
          end: 2.4,
          text: ' Hi Dana.',
          tokens: [1, 2],
          temperature: 0,
          avg_logprob: -0.2,
          compression_ratio: 1.1,
          no_speech_prob: 0.01,
        },
        { id: 1, seek: 0, start: 2.6, end: 5.25, text: ' Hi Sam, thanks.', speaker: 'B' },
        { id: 2, start: 'soon', end: null, text: ' untimed' },
        { id: 3, start: 6, end: 7, text: '   ' },
        'not a segment',
      ],
    });
  const result = await transcriber().transcribe({ audioPath: recording, contentType: 'audio/wav' });
  assert.deepEqual(result, {
    text: 'Hi Dana. Hi Sam, thanks.',
    durationSeconds: 9.5,
    engine: 'openai:whisper-1',
    segments: [
      { start: 0, end: 2.4, speaker: null, text: 'Hi Dana.' },
      { start: 2.6, end: 5.25, speaker: 'B', text: 'Hi Sam, thanks.' },
      { start: null, end: null, speaker: null, text: 'untimed' },
    ],
  });
});

test('the request is a multipart POST with the file as uploaded, model whisper-1, verbose_json and the bearer key', async () => {
  await transcriber().transcribe({ audioPath: recording, contentType: 'audio/wav' });
  assert.equal(seen.length, 1);
  const [request] = seen;
  assert.equal(request!.headers.authorization, `Bearer ${API_KEY}`);
  const file = request!.form!.get('file') as File;
  assert.equal(file.name, 'recording.wav');
  assert.deepEqual(Buffer.from(await file.arrayBuffer()), readFileSync(recording));
  assert.equal(request!.form!.get('model'), 'whisper-1');
  assert.equal(request!.form!.get('response_format'), 'verbose_json');
  assert.equal(request!.headers['transfer-encoding'], undefined, 'the upload states its length');
  assert.ok(Number(request!.headers['content-length']) > readFileSync(recording).length);
});

test('a base URL ending in /v1/ and another model reach the same endpoint with that model', async () => {
  const result = await transcriber({ url: `${baseUrl}/v1/`, model: 'Systran/faster-whisper-small' }).transcribe({
    audioPath: recording,
  });
  assert.equal(seen[0]!.path, '/v1/audio/transcriptions');
  assert.equal(seen[0]!.form!.get('model'), 'Systran/faster-whisper-small');
  assert.equal(result.engine, 'openai:Systran/faster-whisper-small');
});

test('without an API key no Authorization header is sent', async () => {
  await transcriber({ apiKey: undefined }).transcribe({ audioPath: recording });
  assert.equal(seen[0]!.headers.authorization, undefined);
});

test('a temp file without extension is uploaded with the extension of its content type', async () => {
  const bare = join(dir.path, 'download-7f3a');
  writeFileSync(bare, readFileSync(recording));
  await transcriber().transcribe({ audioPath: bare, contentType: 'audio/mpeg' });
  assert.equal((seen[0]!.form!.get('file') as File).name, 'recording.mp3');
});

test('an answer without duration: the real length is measured locally', async () => {
  respond = (_req, res) => json(res, 200, { text: 'hello' });
  const result = await transcriber().transcribe({ audioPath: recording });
  assert.equal(result.durationSeconds, 1.75);
});

test('a stated duration over the longest recording sent is not believed: the real length is measured locally', async () => {
  for (const duration of [5e17, 10 * 3600, '1e300']) {
    respond = (_req, res) => json(res, 200, { text: 'hello', duration });
    const result = await transcriber().transcribe({ audioPath: recording });
    assert.equal(result.durationSeconds, 1.75, `stated ${duration}`);
  }
});

test('a recording over the limit that only the answer reveals (no ffprobe to read it first) is audio_too_long (terminal)', async () => {
  respond = (_req, res) => json(res, 200, { text: 'hello', duration: 5000 });
  const path = process.env.PATH;
  process.env.PATH = dir.path; // no ffprobe: the WAV header is read after the answer
  try {
    await rejectsWith(transcriber({ maxSeconds: 1 }).transcribe({ audioPath: recording }), 'audio_too_long', false);
  } finally {
    process.env.PATH = path;
  }
  assert.equal(seen.length, 1, 'the recording was sent');
});

test('401 is transcription_rejected (terminal) and the key the server echoes is scrubbed', async () => {
  respond = (req, res) =>
    json(res, 401, {
      error: {
        message: `Incorrect API key provided: ${String(req.headers.authorization).slice(7)}.`,
        type: 'invalid_request_error',
        code: 'invalid_api_key',
      },
    });
  await rejectsWith(
    transcriber().transcribe({ audioPath: recording }),
    'transcription_rejected',
    false,
    /HTTP 401.*Incorrect API key provided: \[redacted\]/,
  );
});

test('400 from the server (e.g. an unknown model) is transcription_rejected (terminal) quoting the server', async () => {
  respond = (_req, res) =>
    json(res, 400, { error: { message: 'The model `nope` does not exist', type: 'invalid_request_error' } });
  await rejectsWith(
    transcriber({ model: 'nope' }).transcribe({ audioPath: recording }),
    'transcription_rejected',
    false,
    /does not exist/,
  );
});

test('404 is transcription_rejected (terminal) and points at TRANSCRIBE_URL', async () => {
  await rejectsWith(
    transcriber({ url: `${baseUrl}/not-openai` }).transcribe({ audioPath: recording }),
    'transcription_rejected',
    false,
    /TRANSCRIBE_URL/,
  );
});

test('429 is transcription_rate_limited (retriable) with the Retry-After', async () => {
  respond = (_req, res) =>
    json(res, 429, { error: { message: 'Rate limit reached for whisper-1' } }, { 'retry-after': '20' });
  await rejectsWith(
    transcriber().transcribe({ audioPath: recording }),
    'transcription_rate_limited',
    true,
    /Retry-After 20/,
  );
});

test('500 and 503 are transcription_failed (retriable)', async () => {
  for (const status of [500, 503]) {
    respond = (_req, res) =>
      json(res, status, { error: { message: 'The server had an error while processing your request.' } });
    await rejectsWith(
      transcriber().transcribe({ audioPath: recording }),
      'transcription_failed',
      true,
      new RegExp(`HTTP ${status}`),
    );
  }
});

test('a redirect is not followed: transcription_rejected (terminal)', async () => {
  respond = (_req, res) => {
    res.writeHead(307, { location: 'http://169.254.169.254/latest' });
    res.end();
  };
  await rejectsWith(transcriber().transcribe({ audioPath: recording }), 'transcription_rejected', false, /redirect/);
});

test('a 200 that is not a transcription is transcription_failed (retriable)', async () => {
  respond = (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<html>gateway login</html>');
  };
  await rejectsWith(transcriber().transcribe({ audioPath: recording }), 'transcription_failed', true, /not JSON/);
});

test('no answer within timeoutMs is transcription_timeout (retriable)', async () => {
  respond = () => {}; // holds the request open
  const started = performance.now();
  await rejectsWith(
    transcriber({ timeoutMs: 300 }).transcribe({ audioPath: recording }),
    'transcription_timeout',
    true,
  );
  assert.ok(performance.now() - started < 2_000);
});

test('an unreachable server is transcription_failed (retriable)', async () => {
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));
  await rejectsWith(
    transcriber({ url: `http://127.0.0.1:${port}` }).transcribe({ audioPath: recording }),
    'transcription_failed',
    true,
    /could not be reached/,
  );
});

test("an aborted signal rejects with the signal's reason, not a StepError", async () => {
  respond = () => {};
  const controller = new AbortController();
  const reason = new Error('shutting down');
  const pending = transcriber().transcribe({ audioPath: recording, signal: controller.signal });
  setTimeout(() => controller.abort(reason), 100);
  assert.equal(await rejection(pending), reason);
});

test('a recording file that does not exist is audio_undecodable (terminal) and sends nothing', async () => {
  await rejectsWith(transcriber().transcribe({ audioPath: join(dir.path, 'gone.wav') }), 'audio_undecodable', false);
  assert.equal(seen.length, 0);
});

test('describe names the model and host, never the key', () => {
  const text = transcriber().describe();
  assert.match(text, /whisper-1/);
  assert.ok(text.includes(baseUrl));
  assert.ok(!text.includes(API_KEY));
});

test('a URL that is not http(s), or carries credentials, is refused when the adapter is made', () => {
  assert.throws(() => createOpenAiTranscriber({ url: 'ftp://example.com' }), TypeError);
  assert.throws(() => createOpenAiTranscriber({ url: 'https://user:secret@example.com' }), TypeError);
});

test('a URL on a port fetch never connects to is refused when the adapter is made, naming the port', () => {
  for (const url of ['http://127.0.0.1:6000', 'http://whisper.internal:9/v1'])
    assert.throws(() => createOpenAiTranscriber({ url }), {
      name: 'TypeError',
      message: /^transcription URL names port (6000|9), one that fetch never connects to/,
    });
  assert.ok(createOpenAiTranscriber({ url: 'http://127.0.0.1:8000' }));
});
