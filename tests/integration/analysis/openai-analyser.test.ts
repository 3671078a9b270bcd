/**
 * The OpenAI-compatible analyser against a real HTTP server on 127.0.0.1 that speaks the chat
 * completions shape: each test says how the server answers and checks what the adapter sent and made
 * of the answer.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, test } from 'node:test';
import { Value } from '@sinclair/typebox/value';
import { analyseTranscript } from '../../../shared/adapters/analysis/conversation-analyser.ts';
import { createOpenAiAnalyser } from '../../../shared/adapters/analysis/openai-analyser.ts';
import { AnalysisSchema } from '../../../shared/ports/analyser.ts';
import { isStepError, type StepError } from '../../../shared/ports/step-error.ts';
import { SALES_CALL } from '../../unit/analysis/fixtures.ts';

const API_KEY = 'sk-test-5d1f0c2b9a8e7d6c';
const MODEL = 'test-model';

interface Seen {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
}
type Responder = (req: Seen, res: ServerResponse) => void;

let server: ReturnType<typeof createServer>;
let baseUrl: string;
let respond: Responder;
let seen: Seen[] = [];

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};
const completion = (content: string | null, extra: Record<string, unknown> = {}) => ({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  model: MODEL,
  choices: [{ index: 0, message: { role: 'assistant', content, ...extra }, finish_reason: 'stop' }],
});

/** A correct answer: the built-in analysis of the same call, without engine, speakers null. */
const validAnswer = () => {
  const {
    engine: _engine,
    speakers: _speakers,
    ...rest
  } = analyseTranscript({ transcript: SALES_CALL, repName: 'Alex Kim' });
  return { ...rest, speakers: null };
};

before(async () => {
  server = createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (raw += chunk));
    req.on('end', () => {
      const entry: Seen = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: raw ? JSON.parse(raw) : undefined,
      };
      seen.push(entry);
      respond(entry, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});
beforeEach(() => {
  seen = [];
  respond = (_req, res) => json(res, 200, completion(JSON.stringify(validAnswer())));
});

const analyser = (overrides: Partial<Parameters<typeof createOpenAiAnalyser>[0]> = {}) =>
  createOpenAiAnalyser({ url: baseUrl, apiKey: API_KEY, model: MODEL, timeoutMs: 2_000, ...overrides });

const input = {
  transcript: SALES_CALL,
  repName: 'Alex Kim',
  repEmail: 'alex@acme.io',
  callTitle: 'CRM: Outbound connected',
  callDate: '2026-03-02',
};

/** Rejects with a StepError of this code and retriability whose text never holds the API key. */
const rejectsWith = async (
  promise: Promise<unknown>,
  code: string,
  retriable: boolean,
  message?: RegExp,
): Promise<StepError> => {
  let caught: unknown;
  await assert.rejects(promise, (error: unknown) => {
    caught = error;
    return true;
  });
  assert.ok(isStepError(caught), `expected a StepError, got ${String(caught)}`);
  assert.deepEqual([caught.code, caught.retriable], [code, retriable], caught.message);
  if (message) assert.match(caught.message, message);
  const everything = `${caught.message} ${caught.stack} ${String(caught.cause)} ${(caught.cause as Error | undefined)?.stack ?? ''} ${JSON.stringify(caught)}`;
  assert.ok(!everything.includes(API_KEY), `the API key leaked: ${everything}`);
  return caught;
};

test('a valid JSON-schema answer is accepted as the Analysis, engine set here, speakers null → absent', async () => {
  const analysis = await analyser().analyse(input);
  const expected = validAnswer();
  assert.ok(Value.Check(AnalysisSchema, analysis));
  assert.equal(analysis.engine, 'openai-compatible:test-model');
  assert.equal(analysis.title, expected.title);
  assert.equal(analysis.score, expected.score);
  assert.deepEqual(analysis.insights, expected.insights);
  assert.equal('speakers' in analysis, false);
});

test('the request: POST {url}/v1/chat/completions, bearer key, model, strict json_schema "call_analysis", cleaned transcript', async () => {
  const vtt =
    'WEBVTT\n\n1\n00:00:01.000 --> 00:00:04.000\n<v Alex>What matters most to you?\n\n2\n00:00:04.000 --> 00:00:06.000\n<v Dana>Speed.';
  respond = (_req, res) =>
    json(
      res,
      200,
      completion(
        JSON.stringify({
          ...validAnswer(),
          insights: validAnswer().insights.map((i) => ({ ...i, evidence: 'Speed.' })),
        }),
      ),
    );
  await analyser({ url: `${baseUrl}/v1/` }).analyse({ ...input, transcript: vtt });
  assert.equal(seen.length, 1);
  const [request] = seen;
  assert.equal(request?.method, 'POST');
  assert.equal(request?.path, '/v1/chat/completions');
  assert.equal(request?.headers.authorization, `Bearer ${API_KEY}`);
  assert.equal(request?.headers['content-type'], 'application/json');
  assert.equal(request?.body.model, MODEL);
  assert.equal(request?.body.temperature, undefined);
  const format = request?.body.response_format;
  assert.equal(format.type, 'json_schema');
  assert.equal(format.json_schema.name, 'call_analysis');
  assert.equal(format.json_schema.strict, true);
  const schema = format.json_schema.schema;
  assert.equal(schema.additionalProperties, false);
  assert.deepEqual([...schema.required].sort(), ['components', 'insights', 'score', 'speakers', 'summary', 'title']);
  assert.deepEqual(schema.properties.insights.items.properties.kind, {
    type: 'string',
    enum: ['strength', 'improvement'],
  });
  const text = JSON.stringify(schema);
  for (const keyword of ['minLength', 'maxLength', 'minimum', 'maximum', 'minItems', 'maxItems', 'pattern']) {
    assert.ok(!text.includes(`"${keyword}"`), `strict-mode subset: no ${keyword}`);
  }
  const [system, user] = request?.body.messages ?? [];
  assert.equal(system.role, 'system');
  assert.equal(user.role, 'user');
  assert.match(user.content, /Rep: Alex Kim/);
  assert.match(user.content, /Transcript:\nAlex: What matters most to you\?\nDana: Speed\.$/);
  assert.ok(!user.content.includes('-->') && !user.content.includes('<v'), 'cue timings and tags are not sent');
  assert.ok(!user.content.includes('CRM: Outbound connected'), 'the callTitle is not sent (title rule 1)');
  assert.ok(!user.content.includes('alex@acme.io'), 'the rep e-mail is not sent');
});

test('a base URL with a path prefix keeps it: {url}/v1/chat/completions', async () => {
  await analyser({ url: `${baseUrl}/openai` }).analyse(input);
  await analyser({ url: `${baseUrl}/openai/v1` }).analyse(input);
  assert.deepEqual(
    seen.map((s) => s.path),
    ['/openai/v1/chat/completions', '/openai/v1/chat/completions'],
  );
});

test('no Authorization header without an API key', async () => {
  await analyser({ apiKey: undefined }).analyse(input);
  assert.equal(seen[0]?.headers.authorization, undefined);
});

test('content that is not JSON: analysis_invalid_response, retriable (a model may answer correctly next time)', async () => {
  respond = (_req, res) => json(res, 200, completion('Sure! Here is the analysis: the call went well.'));
  await rejectsWith(analyser().analyse(input), 'analysis_invalid_response', true, /not JSON/);
});

test('JSON fenced in ```json is still read', async () => {
  respond = (_req, res) => json(res, 200, completion(`\`\`\`json\n${JSON.stringify(validAnswer())}\n\`\`\``));
  assert.equal((await analyser().analyse(input)).title, validAnswer().title);
});

test('schema-violating JSON is refused before use, naming where: score out of range, missing field, extra field, bad kind', async () => {
  const cases: [unknown, RegExp][] = [
    [{ ...validAnswer(), score: 150 }, /\/score/],
    [{ ...validAnswer(), score: 71.5 }, /\/score/],
    [(({ summary: _s, ...rest }) => rest)(validAnswer()), /summary|\//],
    [{ ...validAnswer(), verdict: 'great' }, /verdict|\//],
    [
      { ...validAnswer(), insights: validAnswer().insights.map((i) => ({ ...i, kind: 'praise' })) },
      /\/insights\/0\/kind/,
    ],
    [
      { ...validAnswer(), components: validAnswer().components.map((c) => ({ ...c, score: -1 })) },
      /\/components\/0\/score/,
    ],
    [{ ...validAnswer(), insights: validAnswer().insights.slice(0, 1) }, /\/insights/],
    [{ ...validAnswer(), title: '   ' }, /\/title/],
  ];
  for (const [answer, where] of cases) {
    respond = (_req, res) => json(res, 200, completion(JSON.stringify(answer)));
    await rejectsWith(analyser().analyse(input), 'analysis_invalid_response', true, where);
  }
});

test('evidence that is not a quote from the transcript is refused; case, curly quotes, spacing and a trailing "…" are tolerated', async () => {
  const answer = validAnswer();
  respond = (_req, res) =>
    json(
      res,
      200,
      completion(
        JSON.stringify({
          ...answer,
          insights: answer.insights.map((i, n) => (n === 1 ? { ...i, evidence: 'Dana loved the product.' } : i)),
        }),
      ),
    );
  await rejectsWith(
    analyser().analyse(input),
    'analysis_invalid_response',
    true,
    /\/insights\/1\/evidence is not a quote/,
  );

  respond = (_req, res) =>
    json(
      res,
      200,
      completion(
        JSON.stringify({
          ...answer,
          insights: answer.insights.map((i) => ({ ...i, evidence: 'DANA:  That sounds useful, but I’m worried…' })),
        }),
      ),
    );
  assert.equal((await analyser().analyse(input)).insights.length, answer.insights.length);
});

test('an envelope without choices, a refusal, or an answer cut at the token limit: analysis_invalid_response', async () => {
  const cases: Responder[] = [
    (_req, res) => json(res, 200, { error: null }),
    (_req, res) => json(res, 200, null),
    (_req, res) => json(res, 200, { choices: 'none' }),
    (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>proxy login</html>');
    },
    (_req, res) => json(res, 200, completion(null, { refusal: 'I cannot help with that.' })),
    (_req, res) =>
      json(res, 200, {
        ...completion('{"title": "Pric'),
        choices: [{ index: 0, message: { role: 'assistant', content: '{"title": "Pric' }, finish_reason: 'length' }],
      }),
  ];
  for (const responder of cases) {
    respond = responder;
    await rejectsWith(analyser().analyse(input), 'analysis_invalid_response', true);
  }
});

test('HTTP 500 and 503: analysis_unavailable, retriable', async () => {
  for (const status of [500, 503]) {
    respond = (_req, res) =>
      json(res, status, { error: { message: 'The server had an error while processing your request.' } });
    await rejectsWith(
      analyser().analyse(input),
      'analysis_unavailable',
      true,
      new RegExp(`HTTP ${status}.*server had an error`),
    );
  }
});

test('HTTP 429: analysis_rate_limited, retriable, Retry-After quoted', async () => {
  respond = (_req, res) => json(res, 429, { error: { message: 'Rate limit reached' } }, { 'retry-after': '20' });
  await rejectsWith(analyser().analyse(input), 'analysis_rate_limited', true, /HTTP 429, Retry-After 20/);
});

test('HTTP 401 that echoes the key: analysis_rejected, terminal, and the key is scrubbed from the message', async () => {
  respond = (_req, res) =>
    json(res, 401, {
      error: {
        message: `Incorrect API key provided: ${API_KEY}. You can find your API key at …`,
        code: 'invalid_api_key',
      },
    });
  const error = await rejectsWith(
    analyser().analyse(input),
    'analysis_rejected',
    false,
    /HTTP 401.*Incorrect API key provided: \[redacted\]/,
  );
  assert.ok(!error.message.includes('sk-'));
});

test('other 4xx (400 unknown model, 404) and a redirect: analysis_rejected, terminal', async () => {
  for (const status of [400, 404]) {
    respond = (_req, res) => json(res, status, { error: { message: 'The model `test-model` does not exist' } });
    await rejectsWith(analyser().analyse(input), 'analysis_rejected', false, new RegExp(`HTTP ${status}`));
  }
  respond = (_req, res) => {
    res.writeHead(301, { location: 'https://elsewhere.example/v1/chat/completions' });
    res.end();
  };
  await rejectsWith(analyser().analyse(input), 'analysis_rejected', false, /redirect/);
});

test('no answer within timeoutMs: analysis_timeout, retriable', async () => {
  respond = () => {
    /* never answers */
  };
  await rejectsWith(analyser({ timeoutMs: 150 }).analyse(input), 'analysis_timeout', true, /within 150 ms/);
});

test('headers sent but the body stalls past timeoutMs: analysis_timeout too', async () => {
  respond = (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"choices": [');
  };
  await rejectsWith(analyser({ timeoutMs: 150 }).analyse(input), 'analysis_timeout', true);
});

test('an unreachable server: analysis_unavailable, retriable', async () => {
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));
  await rejectsWith(
    analyser({ url: `http://127.0.0.1:${port}` }).analyse(input),
    'analysis_unavailable',
    true,
    /could not be reached/,
  );
});

test("the caller's abort rejects with the caller's reason, not a StepError", async () => {
  respond = () => {
    /* never answers */
  };
  const controller = new AbortController();
  const pending = analyser({ timeoutMs: 5_000 }).analyse(input, { signal: controller.signal });
  setTimeout(() => controller.abort(new Error('processor shutting down')), 50);
  await assert.rejects(
    pending,
    (error: unknown) => !isStepError(error) && error instanceof Error && error.message === 'processor shutting down',
  );
});

test('an empty transcript is transcript_empty (terminal) and costs no request', async () => {
  await rejectsWith(
    analyser().analyse({ transcript: 'WEBVTT\n\n00:00:01.000 --> 00:00:02.000\n' }),
    'transcript_empty',
    false,
  );
  assert.equal(seen.length, 0);
});

test('describe names the model and host, never the key; URLs with credentials, other schemes or a port fetch refuses are refused', () => {
  const description = analyser().describe();
  assert.match(description, /test-model/);
  assert.ok(description.includes(baseUrl));
  assert.ok(!description.includes(API_KEY));
  assert.throws(
    () => createOpenAiAnalyser({ url: 'http://user:secret@127.0.0.1:1', model: MODEL, timeoutMs: 1_000 }),
    /credentials/,
  );
  assert.throws(() => createOpenAiAnalyser({ url: 'ftp://127.0.0.1', model: MODEL, timeoutMs: 1_000 }), /http/);
  assert.throws(
    () => createOpenAiAnalyser({ url: 'http://127.0.0.1:6000', model: MODEL, timeoutMs: 1_000 }),
    /^TypeError: analysis URL names port 6000, one that fetch never connects to/,
  );
});
