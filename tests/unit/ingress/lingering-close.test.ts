/**
 * A refusal answered before the body was read keeps reading the body before it closes, but for
 * LINGER_MS at most (services/ingress/lingering-close.ts): a client that never stops sending is cut
 * off, after it was sent its answer.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { connect } from 'node:net';
import { test } from 'node:test';
import { lingeringClose } from '../../../services/ingress/lingering-close.ts';

test('a client that never stops sending gets its answer, and the connection is closed after the linger', async (t) => {
  const server = createServer((request, response) => {
    lingeringClose(300).linger(request);
    response.writeHead(413, { connection: 'close', 'content-length': '2' }).end('no');
  });
  const serverClosed = new Promise<number>((resolve) =>
    server.once('connection', (s) => s.once('close', () => resolve(Date.now()))),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  const { port } = server.address() as { port: number };
  // Half-open allowed: it goes on sending after the server's FIN, as a client busy uploading does.
  const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  let answer = '';
  socket.on('data', (chunk) => (answer += chunk.toString()));
  socket.on('error', () => undefined);
  socket.write('POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n');
  const started = Date.now();
  const sending = setInterval(() => socket.writable && socket.write('400\r\n' + 'a'.repeat(1024) + '\r\n'), 20);
  t.after(() => {
    clearInterval(sending);
    socket.destroy();
  });
  const open = (await serverClosed) - started;
  assert.match(answer, /^HTTP\/1\.1 413 /);
  assert.ok(open >= 250, `the connection stayed open while the body came (${open} ms)`);
  assert.ok(open < 5_000, `and was closed after the linger (${open} ms)`);
});

test('a body that has all arrived closes the connection at once', async (t) => {
  const server = createServer((request, response) => {
    lingeringClose(60_000).linger(request);
    response.writeHead(413, { connection: 'close', 'content-length': '2' }).end('no');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  const { port } = server.address() as { port: number };
  const socket = connect(port, '127.0.0.1');
  let answer = '';
  socket.on('data', (chunk) => (answer += chunk.toString()));
  socket.write('POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n');
  setTimeout(() => socket.write('3\r\nabc\r\n0\r\n\r\n'), 100);
  const started = Date.now();
  await new Promise((resolve) => socket.once('close', resolve));
  assert.match(answer, /^HTTP\/1\.1 413 /);
  assert.ok(Date.now() - started < 5_000, 'closed once the body ended, long before the linger');
});
