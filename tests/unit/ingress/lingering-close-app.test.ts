/**
 * The service's lingering close (services/ingress/lingering-close.ts, app.ts) on a real socket: a
 * request pipelined behind a refused body is not run while the connection lingers (the refusal said
 * `Connection: close`, so its client takes it as not processed, RFC 9112 §9.6), and a connection
 * still lingering does not hold up a shutdown (it held it for up to 10 s).
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { test } from 'node:test';
import { LINGER_MS } from '../../../services/ingress/lingering-close.ts';
import { openEmbeddedIngress } from '../../support/embedded-ingress.ts';
import { ADMIN_TOKEN } from '../../support/ingress-harness.ts';

const INGEST = '/api/integrations/push-api/ingest';
const BODY = JSON.stringify({ transcript: 'Rep: Hello Dana.\nDana: Hello.' });

/** Everything the server sends until it closes the connection. */
const readAll = (socket: Socket): Promise<string> =>
  new Promise((resolve) => {
    let text = '';
    socket.on('data', (chunk) => (text += chunk.toString()));
    socket.on('error', () => undefined);
    socket.once('close', () => resolve(text));
  });

test('a request pipelined behind a refused body is not run, and only the refusal is answered', async (t) => {
  const embedded = await openEmbeddedIngress();
  t.after(() => embedded.close());
  const port = await embedded.listen();
  const { teamId, key, keyId } = await embedded.h.team();
  const socket = connect(port, '127.0.0.1');
  const answers = readAll(socket);
  // A 401 (no valid key) answered once the headers are read, with 10 bytes of the body still to come.
  const refused = `POST ${INGEST} HTTP/1.1\r\nHost: x\r\nX-API-Key: pk_wrong\r\nContent-Type: application/json\r\nContent-Length: ${BODY.length}\r\n\r\n`;
  socket.write(refused + BODY.slice(0, BODY.length - 10));
  await new Promise((resolve) => setTimeout(resolve, 300));
  // The rest of that body and, in the same packet, a request without a body that would revoke the
  // team's key were it run.
  const pipelined = `DELETE /api/admin/teams/${teamId}/keys/${keyId} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN_TOKEN}\r\n\r\n`;
  socket.write(BODY.slice(BODY.length - 10) + pipelined);
  const text = await answers;
  assert.match(text, /^HTTP\/1\.1 401 /);
  assert.equal(text.match(/HTTP\/1\.1 \d{3}/g)?.length, 1, `one answer only: ${text}`);
  // It was not run: the key still works.
  await new Promise((resolve) => setTimeout(resolve, 300));
  const call = await embedded.h.ingest({ key, payload: BODY });
  assert.equal(call.statusCode, 201, call.body);
});

test('a connection lingering after a refusal does not hold up a shutdown', async (t) => {
  const embedded = await openEmbeddedIngress();
  let closed = false;
  t.after(() => (closed ? undefined : embedded.close()));
  const port = await embedded.listen();
  // Half-open allowed: it goes on sending after the server's FIN, as a client busy uploading does.
  const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  const answers = readAll(socket);
  socket.write(
    `POST ${INGEST} HTTP/1.1\r\nHost: x\r\nX-API-Key: pk_wrong\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`,
  );
  const sending = setInterval(() => socket.writable && socket.write('400\r\n' + 'a'.repeat(1024) + '\r\n'), 20);
  t.after(() => {
    clearInterval(sending);
    socket.destroy();
  });
  // The refusal arrives while the client is still sending: the connection now lingers.
  for (let i = 0; i < 100 && !socket.readableLength && socket.bytesRead === 0; i++)
    await new Promise((resolve) => setTimeout(resolve, 20));
  await new Promise((resolve) => setTimeout(resolve, 200));
  const started = Date.now();
  await embedded.h.ingress.app.close();
  const took = Date.now() - started;
  closed = true;
  await embedded.close();
  assert.match(await answers, /^HTTP\/1\.1 401 /);
  assert.ok(took < LINGER_MS / 2, `the shutdown did not wait for the linger (${took} ms of ${LINGER_MS})`);
});
