/**
 * Who a body's share is charged to: a team by its key, the admin API, or anyone else (a route that
 * does not exist). Bodies sent to no route, arriving slowly, hold only their own half.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { test } from 'node:test';
import Fastify from 'fastify';
import { createBodyBudget, registerBodyBudget } from '../../../services/ingress/body-budget.ts';

test('slow bodies sent to a route that does not exist do not keep the admin API out', async () => {
  const app = Fastify();
  registerBodyBudget(app, createBodyBudget(4 * 1024 * 1024, 2_000));
  app.post('/api/admin/things', async () => ({ ok: true }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as { port: number };
  let slowAnswered = 0;
  const sockets = Array.from({ length: 4 }, () => {
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.once('data', () => slowAnswered++);
    socket.write(
      `POST /nope HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${1024 * 1024}\r\n\r\n{`,
    );
    return socket;
  });
  try {
    await new Promise((resolve) => setTimeout(resolve, 200));
    const res = await fetch(`http://127.0.0.1:${port}/api/admin/things`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'x'.repeat(100_000) }), // over the size that passes the queue
    });
    assert.equal(res.status, 200, await res.text());
    assert.equal(slowAnswered, 0, 'answered while the slow bodies still wait or arrive');
  } finally {
    for (const socket of sockets) socket.destroy();
    await app.close();
  }
});
