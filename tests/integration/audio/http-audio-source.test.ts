import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname } from 'node:path';
import { type TestContext, test } from 'node:test';
import { classifyAddress } from '../../../shared/adapters/audio/address-policy.ts';
import {
  createHttpAudioSource,
  type HttpAudioSourceOptions,
  USER_AGENT,
} from '../../../shared/adapters/audio/http-audio-source.ts';
import type { AudioFetchErrorCode } from '../../../shared/ports/audio-source.ts';
import { isStepError, type StepError } from '../../../shared/ports/step-error.ts';
import { eventually } from '../../support/eventually.ts';
import { tempDir } from '../../support/temp-dir.ts';

type Route = (req: IncomingMessage, res: ServerResponse) => void;

/** A real HTTP server on an ephemeral port; it records each request and each closed connection. */
const serve = async (t: TestContext, routes: Record<string, Route>, { host = '127.0.0.1', port = 0 } = {}) => {
  const requests: { path: string; headers: IncomingHttpHeaders }[] = [];
  let closedRequests = 0;
  const server = http.createServer((req, res) => {
    requests.push({ path: req.url ?? '', headers: req.headers });
    res.on('close', () => closedRequests++);
    const route = routes[(req.url ?? '').split('?')[0] ?? ''];
    if (route) route(req, res);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, host, resolve));
  t.after(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const { port: actualPort } = server.address() as AddressInfo;
  return {
    port: actualPort,
    url: (path: string) => `http://${host}:${actualPort}${path}`,
    requests,
    closedRequests: () => closedRequests,
  };
};

const body = (res: ServerResponse, contentType: string, bytes: Buffer, { chunked = false } = {}) => {
  res.writeHead(
    200,
    chunked ? { 'content-type': contentType } : { 'content-type': contentType, 'content-length': bytes.length },
  );
  if (!chunked) return void res.end(bytes);
  for (let at = 0; at < bytes.length; at += 1000) res.write(bytes.subarray(at, at + 1000));
  res.end();
};
const redirect =
  (status: number, location: string): Route =>
  (_req, res) =>
    void res.writeHead(status, { location }).end();
const stall: Route = () => {};

const wav = Buffer.concat([Buffer.from('RIFF\x24\x00\x01\x00WAVEfmt ', 'latin1'), randomBytes(64 * 1024)]);
const mp3 = Buffer.concat([Buffer.from([0x49, 0x44, 0x33, 0x04, 0x00]), randomBytes(20_000)]);

/** An audio source writing into a fresh temp dir; private addresses allowed unless the test says otherwise. */
const setup = (t: TestContext, options: Partial<HttpAudioSourceOptions> = {}) => {
  const tmp = tempDir('audio-fetch-test-');
  t.after(tmp.remove);
  const source = createHttpAudioSource({
    maxBytes: 1024 * 1024,
    timeoutMs: 5_000,
    allowPrivate: true,
    tmpDir: tmp.path,
    ...options,
  });
  return { source, tempFiles: () => readdirSync(tmp.path), tmpDir: tmp.path };
};

/** The policy with some loopback addresses let through, as a public host would be. */
const allowOnly =
  (...ips: string[]) =>
  (ip: string) =>
    ips.includes(ip) ? ({ allowed: true } as const) : classifyAddress(ip);

const rejection = async (promise: Promise<unknown>): Promise<unknown> => {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  return assert.fail('expected a rejection');
};

const stepError = async (
  promise: Promise<unknown>,
  code: AudioFetchErrorCode,
  retriable: boolean,
): Promise<StepError> => {
  const error = await rejection(promise);
  assert.ok(isStepError(error), `expected a StepError, got ${String(error)}`);
  assert.equal(error.code, code, error.message);
  assert.equal(error.retriable, retriable, `${code} retriable`);
  return error;
};

test('with allowPrivate a loopback WAV is fetched into a temp file: bytes, content type, contents; cleanup removes it', async (t) => {
  const server = await serve(t, { '/call.wav': (_req, res) => body(res, 'audio/wav', wav) });
  const { source, tmpDir } = setup(t);

  const fetched = await source.fetch(server.url('/call.wav'));

  assert.equal(fetched.bytes, wav.length);
  assert.equal(fetched.contentType, 'audio/wav');
  assert.equal(fetched.finalUrl, server.url('/call.wav'));
  assert.equal(dirname(fetched.path), tmpDir);
  assert.deepEqual(readFileSync(fetched.path), wav);
  await fetched.cleanup();
  assert.equal(existsSync(fetched.path), false);
  await fetched.cleanup(); // idempotent
});

test('a chunked body without Content-Length is streamed whole; the media type loses its parameters', async (t) => {
  const server = await serve(t, {
    '/call.mp3': (_req, res) => body(res, 'Audio/MPEG; charset=binary', mp3, { chunked: true }),
    '/call.mp4': (_req, res) => body(res, 'video/mp4', mp3, { chunked: true }),
    '/call.bin': (_req, res) => body(res, 'application/octet-stream', mp3),
  });
  const { source } = setup(t);
  for (const [path, type] of [
    ['/call.mp3', 'audio/mpeg'],
    ['/call.mp4', 'video/mp4'],
    ['/call.bin', 'application/octet-stream'],
  ] as const) {
    const fetched = await source.fetch(server.url(path));
    assert.equal(fetched.contentType, type);
    assert.equal(fetched.bytes, mp3.length);
    assert.deepEqual(readFileSync(fetched.path), mp3);
    await fetched.cleanup();
  }
});

test('every hop carries our User-Agent and no cookie or credentials, even when a redirect sets a cookie', async (t) => {
  const server = await serve(t, {
    '/start': (_req, res) => void res.writeHead(302, { location: '/call.wav', 'set-cookie': 'session=secret' }).end(),
    '/call.wav': (_req, res) => body(res, 'audio/wav', wav),
  });
  const { source } = setup(t);
  await (await source.fetch(server.url('/start'))).cleanup();
  assert.equal(server.requests.length, 2);
  for (const { headers } of server.requests) {
    assert.equal(headers['user-agent'], USER_AGENT);
    assert.equal(headers.cookie, undefined);
    assert.equal(headers.authorization, undefined);
  }
});

test('without AUDIO_FETCH_ALLOW_PRIVATE a non-public IP literal is audio_fetch_blocked before any request, in the words an unreachable host gets', async (t) => {
  const server = await serve(t, { '/call.wav': (_req, res) => body(res, 'audio/wav', wav) });
  const { source, tempFiles } = setup(t, { allowPrivate: false, allowedPorts: [80, 443, server.port] });
  const cases = [
    [server.url('/call.wav'), '127.0.0.1', 'a loopback'],
    [`http://[::1]:${server.port}/call.wav`, '::1', 'a loopback'],
    [`http://[::ffff:127.0.0.1]:${server.port}/call.wav`, '::ffff:7f00:1', 'a loopback address \\(embedded 127'],
    [`http://0x7f.1:${server.port}/call.wav`, '127.0.0.1', 'a loopback'],
    ['http://169.254.169.254/latest/meta-data/', '169.254.169.254', 'a cloud metadata service'],
    ['https://10.0.0.1/call.wav', '10.0.0.1', 'a private-network'],
    ['http://100.64.0.1/call.wav', '100.64.0.1', 'a carrier-grade NAT'],
  ] as const;
  for (const [url, host, addressClass] of cases) {
    const error = await stepError(source.fetch(url), 'audio_fetch_blocked', false);
    assert.equal(
      error.message,
      `The audio host "${host}" could not be reached, or is not a public internet address.`,
      url,
    );
    assert.match(
      String((error.cause as Error).message),
      new RegExp(`${addressClass}.*AUDIO_FETCH_ALLOW_PRIVATE=true`),
      'the logs keep the detail',
    );
  }
  assert.equal(server.requests.length, 0);
  assert.deepEqual(tempFiles(), []);
});

test('a host name that resolves to a non-public address fails as a name that does not resolve: audio_unreachable, retriable, the same words; the class stays in cause', async (t) => {
  const server = await serve(t, { '/call.wav': (_req, res) => body(res, 'audio/wav', wav) });
  const resolveHost = async (hostname: string) => {
    if (hostname === 'intranet.test') return [{ address: '10.0.0.5', family: 4 }];
    if (hostname === 'metadata.test') return [{ address: '169.254.169.254', family: 4 }];
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
  };
  const { source, tempFiles } = setup(t, { allowPrivate: false, resolveHost, allowedPorts: [80, 443, server.port] });
  const generic = (host: string) =>
    `The audio host "${host}" could not be reached, or is not a public internet address.`;
  const missing = await stepError(source.fetch('http://missing.test/call.wav'), 'audio_unreachable', true);
  assert.equal(missing.message, generic('missing.test'));
  for (const [host, addressClass] of [
    ['intranet.test', 'a private-network'],
    ['metadata.test', 'a cloud metadata service'],
  ] as const) {
    const error = await stepError(source.fetch(`http://${host}/call.wav`), 'audio_unreachable', true);
    assert.equal(error.message, generic(host));
    assert.match(String((error.cause as Error).message), new RegExp(`${addressClass}.*AUDIO_FETCH_ALLOW_PRIVATE=true`));
  }
  // Through the system's resolver, at connect time.
  const local = setup(t, { allowPrivate: false, allowedPorts: [server.port] });
  const error = await stepError(
    local.source.fetch(`http://localhost:${server.port}/call.wav`),
    'audio_unreachable',
    true,
  );
  assert.equal(error.message, generic('localhost'));
  assert.match(String((error.cause as Error).message), /a loopback/);
  assert.equal(server.requests.length, 0);
  assert.deepEqual(tempFiles(), []);
});

test('only ports 80 and 443 unless allowed: another port is audio_fetch_blocked before any request, also on a redirect; AUDIO_FETCH_ALLOW_PRIVATE lifts it', async (t) => {
  const server = await serve(t, { '/call.wav': (_req, res) => body(res, 'audio/wav', wav) });
  const { source } = setup(t, { allowPrivate: false, classifyAddress: allowOnly('127.0.0.1') });
  const error = await stepError(source.fetch(server.url('/call.wav')), 'audio_fetch_blocked', false);
  assert.equal(error.message, `The audio URL uses port ${server.port}; only ports 80, 443 may be fetched.`);
  assert.equal(server.requests.length, 0);

  const origin = await serve(t, { '/start': redirect(302, server.url('/call.wav')) });
  const viaRedirect = setup(t, {
    allowPrivate: false,
    classifyAddress: allowOnly('127.0.0.1'),
    allowedPorts: [origin.port],
  });
  await stepError(viaRedirect.source.fetch(origin.url('/start')), 'audio_fetch_blocked', false);
  assert.equal(server.requests.length, 0, 'the redirect target on another port is never requested');

  const allowed = setup(t, {
    allowPrivate: false,
    classifyAddress: allowOnly('127.0.0.1'),
    allowedPorts: [origin.port, server.port],
  });
  await (await allowed.source.fetch(origin.url('/start'))).cleanup();
  await (await setup(t).source.fetch(server.url('/call.wav'))).cleanup();
  assert.equal(server.requests.length, 2);
});

test('a host name is checked on every resolved address at connect time, and the socket goes to the checked address', async (t) => {
  const server = await serve(t, { '/call.wav': (_req, res) => body(res, 'audio/wav', wav) });
  const resolveHost = async (hostname: string) =>
    hostname === 'audio.test'
      ? [{ address: '127.0.0.1', family: 4 }]
      : [
          { address: '127.0.0.1', family: 4 },
          { address: '127.0.0.2', family: 4 },
        ];
  const { source } = setup(t, {
    allowPrivate: false,
    classifyAddress: allowOnly('127.0.0.1'),
    resolveHost,
    allowedPorts: [server.port],
  });

  const fetched = await source.fetch(`http://audio.test:${server.port}/call.wav`); // not in DNS: only the checked address works
  assert.deepEqual(readFileSync(fetched.path), wav);
  await fetched.cleanup();

  const error = await stepError(source.fetch(`http://mixed.test:${server.port}/call.wav`), 'audio_unreachable', true);
  assert.equal(error.message, 'The audio host "mixed.test" could not be reached, or is not a public internet address.');
  assert.equal(server.requests.length, 1, 'one refused address refuses the host');
});

test('DNS rebinding: a host that resolves to an allowed address and then to a blocked one is refused on the next hop', async (t) => {
  const allowedServer = await serve(t, { '/start': redirect(302, '/call.wav') });
  const blockedServer = await serve(
    t,
    { '/call.wav': (_req, res) => body(res, 'audio/wav', wav) },
    { host: '127.0.0.2', port: allowedServer.port },
  );
  const rebinding = () => {
    let calls = 0;
    return async () => [{ address: calls++ === 0 ? '127.0.0.1' : '127.0.0.2', family: 4 }];
  };
  const url = `http://rebind.test:${allowedServer.port}/start`;

  const { source } = setup(t, {
    allowPrivate: false,
    classifyAddress: allowOnly('127.0.0.1'),
    resolveHost: rebinding(),
    allowedPorts: [allowedServer.port],
  });
  await stepError(source.fetch(url), 'audio_unreachable', true);
  assert.equal(blockedServer.requests.length, 0);

  // Control: were 127.0.0.2 allowed, the second hop would have reached it.
  const control = setup(t, {
    allowPrivate: false,
    classifyAddress: allowOnly('127.0.0.1', '127.0.0.2'),
    resolveHost: rebinding(),
    allowedPorts: [allowedServer.port],
  });
  await (await control.source.fetch(url)).cleanup();
  assert.equal(blockedServer.requests.length, 1);
});

test('a redirect from an allowed host to a blocked address is refused before connecting to it', async (t) => {
  const target = await serve(t, { '/call.wav': (_req, res) => body(res, 'audio/wav', wav) }, { host: '127.0.0.2' });
  const origin = await serve(t, { '/start': redirect(307, target.url('/call.wav')) });

  const ports = [origin.port, target.port];
  const { source, tempFiles } = setup(t, {
    allowPrivate: false,
    classifyAddress: allowOnly('127.0.0.1'),
    allowedPorts: ports,
  });
  const error = await stepError(source.fetch(origin.url('/start')), 'audio_fetch_blocked', false);
  assert.equal(error.message, 'The audio host "127.0.0.2" could not be reached, or is not a public internet address.');
  assert.equal(target.requests.length, 0);
  assert.deepEqual(tempFiles(), []);

  // Control: the same redirect is followed when the target is allowed.
  const control = setup(t, {
    allowPrivate: false,
    classifyAddress: allowOnly('127.0.0.1', '127.0.0.2'),
    allowedPorts: ports,
  });
  const fetched = await control.source.fetch(origin.url('/start'));
  assert.equal(fetched.finalUrl, target.url('/call.wav'));
  await fetched.cleanup();
});

test('up to 3 redirects (301, 302, 303, 307, 308; relative or absolute) are followed; the 4th is audio_too_many_redirects', async (t) => {
  const statuses = [301, 302, 303, 307, 308];
  const routes: Record<string, Route> = { '/hop/0': (_req, res) => body(res, 'audio/wav', wav) };
  for (let n = 1; n <= 5; n++) routes[`/hop/${n}`] = redirect(statuses[n % statuses.length] ?? 302, `/hop/${n - 1}`);
  const server = await serve(t, routes);
  routes['/absolute'] = redirect(301, server.url('/hop/2'));
  const { source, tempFiles } = setup(t);

  const fetched = await source.fetch(server.url('/hop/3'));
  assert.equal(fetched.finalUrl, server.url('/hop/0'));
  assert.deepEqual(readFileSync(fetched.path), wav);
  await fetched.cleanup();
  const viaAbsolute = await source.fetch(server.url('/absolute'));
  assert.equal(viaAbsolute.finalUrl, server.url('/hop/0'));
  await viaAbsolute.cleanup();
  assert.equal(server.requests.length, 8);

  server.requests.length = 0;
  const error = await stepError(source.fetch(server.url('/hop/4')), 'audio_too_many_redirects', false);
  assert.match(error.message, /more than 3 times/);
  assert.deepEqual(
    server.requests.map((r) => r.path),
    ['/hop/4', '/hop/3', '/hop/2', '/hop/1'],
    'the 4th target is never requested',
  );

  const noRedirects = setup(t, { maxRedirects: 0 });
  await stepError(noRedirects.source.fetch(server.url('/hop/1')), 'audio_too_many_redirects', false);
  assert.deepEqual(tempFiles(), []);
});

test('a redirect to a non-http scheme or to a URL with credentials is audio_url_invalid; a redirect without Location is an HTTP error', async (t) => {
  const server = await serve(t, {
    '/to-ftp': redirect(302, 'ftp://files.example.com/call.wav'),
    '/to-file': redirect(302, 'file:///etc/passwd'),
    '/to-credentials': redirect(302, 'http://user:pass@127.0.0.1/call.wav'),
    '/no-location': (_req, res) => void res.writeHead(302).end(),
  });
  const { source } = setup(t);
  assert.match(
    (await stepError(source.fetch(server.url('/to-ftp')), 'audio_url_invalid', false)).message,
    /redirected .* "ftp" scheme/,
  );
  await stepError(source.fetch(server.url('/to-file')), 'audio_url_invalid', false);
  assert.match(
    (await stepError(source.fetch(server.url('/to-credentials')), 'audio_url_invalid', false)).message,
    /user name or password/,
  );
  assert.match(
    (await stepError(source.fetch(server.url('/no-location')), 'audio_http_error', false)).message,
    /HTTP 302/,
  );
});

test('ftp://, file:// and http://user:pass@host/ are audio_url_invalid without any request', async (t) => {
  const server = await serve(t, {});
  const { source } = setup(t);
  for (const url of [
    'ftp://example.com/call.wav',
    'file:///tmp/call.wav',
    `http://user:pass@127.0.0.1:${server.port}/call.wav`,
    'not a url',
  ]) {
    await stepError(source.fetch(url), 'audio_url_invalid', false);
  }
  assert.equal(server.requests.length, 0);
});

test('audio_too_large when Content-Length is over the cap, decided on the headers without reading the body', async (t) => {
  // The body never comes: waiting for it would end in audio_timeout instead.
  const server = await serve(t, {
    '/big.wav': (_req, res) =>
      res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': 1001 }).flushHeaders(),
  });
  const { source, tempFiles } = setup(t, { maxBytes: 1000 });
  const error = await stepError(source.fetch(server.url('/big.wav')), 'audio_too_large', false);
  assert.match(error.message, /1001 bytes .* 1000-byte limit/);
  assert.deepEqual(tempFiles(), []);
});

test('audio_too_large when a chunked body streams past the cap (exactly the cap is fine); the partial file is removed', async (t) => {
  const endless: Route = (_req, res) => {
    res.writeHead(200, { 'content-type': 'audio/mpeg' });
    const pump = () => {
      while (!res.destroyed && res.write(Buffer.alloc(100, 1)));
      if (!res.destroyed) res.once('drain', pump);
    };
    pump();
  };
  const server = await serve(t, {
    '/exact.mp3': (_req, res) => body(res, 'audio/mpeg', Buffer.alloc(5000, 7), { chunked: true }),
    '/over.mp3': (_req, res) => body(res, 'audio/mpeg', Buffer.alloc(5001, 7), { chunked: true }),
    '/endless.mp3': endless,
  });
  const { source, tempFiles } = setup(t, { maxBytes: 5000 });

  const exact = await source.fetch(server.url('/exact.mp3'));
  assert.equal(exact.bytes, 5000);
  await exact.cleanup();
  await stepError(source.fetch(server.url('/over.mp3')), 'audio_too_large', false);
  await stepError(source.fetch(server.url('/endless.mp3')), 'audio_too_large', false);
  await eventually(() => assert.equal(server.closedRequests(), 3), { timeoutMs: 2_000 }); // the endless stream was cut
  assert.deepEqual(tempFiles(), []);
});

test('audio_timeout (retriable) when the server stalls before answering or in the middle of the body', async (t) => {
  const server = await serve(t, {
    '/silent': stall,
    '/half': (_req, res) =>
      res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': 1000 }).write(Buffer.alloc(10)),
  });
  const { source, tempFiles } = setup(t, { timeoutMs: 200 });
  assert.match((await stepError(source.fetch(server.url('/silent')), 'audio_timeout', true)).message, /within 200 ms/);
  await stepError(source.fetch(server.url('/half')), 'audio_timeout', true);
  assert.deepEqual(tempFiles(), []);
  await eventually(() => assert.equal(server.closedRequests(), 2), { timeoutMs: 2_000 });
});

test('the deadline spans all hops: two hops of 150 ms each miss a 250 ms deadline', async (t) => {
  const later =
    (ms: number, route: Route): Route =>
    (req, res) =>
      void setTimeout(() => route(req, res), ms);
  const server = await serve(t, {
    '/slow-hop': later(150, redirect(302, '/slow-audio')),
    '/slow-audio': later(150, (_req, res) => body(res, 'audio/wav', wav)),
  });
  const { source } = setup(t, { timeoutMs: 250 });
  await stepError(source.fetch(server.url('/slow-hop')), 'audio_timeout', true);
});

test('audio_unsupported_type names the content type (text/html, application/json, none)', async (t) => {
  const server = await serve(t, {
    '/page': (_req, res) => body(res, 'text/html; charset=utf-8', Buffer.from('<html></html>')),
    '/json': (_req, res) => body(res, 'application/json', Buffer.from('{}')),
    '/untyped': (_req, res) => res.end('bytes'),
  });
  const { source, tempFiles } = setup(t);
  assert.match(
    (await stepError(source.fetch(server.url('/page')), 'audio_unsupported_type', false)).message,
    /"text\/html"/,
  );
  assert.match(
    (await stepError(source.fetch(server.url('/json')), 'audio_unsupported_type', false)).message,
    /"application\/json"/,
  );
  assert.match(
    (await stepError(source.fetch(server.url('/untyped')), 'audio_unsupported_type', false)).message,
    /no Content-Type/,
  );
  assert.deepEqual(tempFiles(), []);
});

test('404 and 410 are audio_not_found; 5xx, 429 and 408 retriable audio_http_error; other 4xx terminal', async (t) => {
  const statuses = [404, 410, 500, 502, 503, 429, 408, 400, 401, 403, 300, 304];
  const routes: Record<string, Route> = {};
  for (const status of statuses)
    routes[`/${status}`] = (_req, res) => void res.writeHead(status, { 'content-type': 'audio/wav' }).end();
  const server = await serve(t, routes);
  const { source, tempFiles } = setup(t);
  const expected: Record<number, [AudioFetchErrorCode, boolean]> = {
    404: ['audio_not_found', false],
    410: ['audio_not_found', false],
    500: ['audio_http_error', true],
    502: ['audio_http_error', true],
    503: ['audio_http_error', true],
    429: ['audio_http_error', true],
    408: ['audio_http_error', true],
    400: ['audio_http_error', false],
    401: ['audio_http_error', false],
    403: ['audio_http_error', false],
    300: ['audio_http_error', false],
    304: ['audio_http_error', false],
  };
  for (const status of statuses) {
    const [code, retriable] = expected[status] ?? assert.fail();
    const error = await stepError(source.fetch(server.url(`/${status}?signature=secret`)), code, retriable);
    assert.match(error.message, new RegExp(`${status}`));
    assert.doesNotMatch(error.message, /secret/, 'the query string (pre-signed URL secrets) stays out of the message');
  }
  assert.deepEqual(tempFiles(), []);
});

test('connection refused, DNS failure, a connection cut mid-body and a TLS failure are retriable audio_unreachable, all in the same words', async (t) => {
  const server = await serve(t, {
    '/cut': (_req, res) => {
      res
        .writeHead(200, { 'content-type': 'audio/wav', 'content-length': 1000 })
        .write(Buffer.alloc(10), () => res.socket?.destroy());
    },
  });
  const { source, tempFiles } = setup(t);
  const generic = (host: string) =>
    `The audio host "${host}" could not be reached, or is not a public internet address.`;
  const refusedUrl = `http://127.0.0.1:${await freePort()}/call.wav`; // nothing listens there
  const refused = await stepError(source.fetch(refusedUrl), 'audio_unreachable', true);
  assert.equal(refused.message, generic('127.0.0.1'));
  assert.equal((refused.cause as NodeJS.ErrnoException).code, 'ECONNREFUSED', 'the logs keep the cause');
  const noDns = setup(t, {
    resolveHost: async (hostname) =>
      Promise.reject(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' })),
  });
  assert.equal(
    (await stepError(noDns.source.fetch('http://audio.test/call.wav'), 'audio_unreachable', true)).message,
    generic('audio.test'),
  );
  assert.equal(
    (await stepError(source.fetch(server.url('/cut')), 'audio_unreachable', true)).message,
    generic('127.0.0.1'),
  );
  const tls = await stepError(source.fetch(`https://127.0.0.1:${server.port}/call.wav`), 'audio_unreachable', true); // TLS to a plain HTTP server
  assert.equal(tls.message, generic('127.0.0.1'));
  assert.deepEqual(tempFiles(), []);
});

test('the caller aborting stops the fetch before the answer and mid-body; the rejection is the signal reason; no temp file is left', async (t) => {
  const server = await serve(t, {
    '/silent': stall,
    '/half': (_req, res) =>
      res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': 100_000 }).write(Buffer.alloc(10)),
  });
  const { source, tempFiles } = setup(t);

  const before = new AbortController();
  const waiting = source.fetch(server.url('/silent'), { signal: before.signal });
  await eventually(() => assert.equal(server.requests.length, 1));
  const shutdown = new Error('shutting down');
  before.abort(shutdown);
  assert.equal(await rejection(waiting), shutdown);
  await eventually(() => assert.equal(server.closedRequests(), 1), { timeoutMs: 2_000 });

  const midBody = new AbortController();
  const streaming = source.fetch(server.url('/half'), { signal: midBody.signal });
  await eventually(() => assert.equal(tempFiles().length, 1));
  midBody.abort();
  assert.equal(((await rejection(streaming)) as Error).name, 'AbortError');
  assert.deepEqual(tempFiles(), []);
  await eventually(() => assert.equal(server.closedRequests(), 2), { timeoutMs: 2_000 });

  const already = AbortSignal.abort(shutdown);
  assert.equal(await rejection(source.fetch(server.url('/silent'), { signal: already })), shutdown);
  assert.equal(server.requests.length, 2);
});

const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = http.createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });

test('options are validated', () => {
  assert.throws(() => createHttpAudioSource({ maxBytes: 0, timeoutMs: 1, allowPrivate: false }), RangeError);
  assert.throws(() => createHttpAudioSource({ maxBytes: 1, timeoutMs: 1.5, allowPrivate: false }), RangeError);
  assert.throws(
    () => createHttpAudioSource({ maxBytes: 1, timeoutMs: 1, allowPrivate: false, maxRedirects: -1 }),
    RangeError,
  );
});
