/**
 * Many bodies at the size limit at once do not run the service out of heap: forty 10 MB calls sent
 * together take turns (services/ingress/body-budget.ts) and are each answered 201, or 503 with
 * Retry-After when one waited too long; none is cut off, and the service goes on. A team whose large
 * bodies arrive slowly does not keep another team's calls out.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, test } from 'node:test';
import { ADMIN_TOKEN } from '../../support/ingress-harness.ts';
import { type ServiceProcess, startService } from '../../support/service-process.ts';
import { tempDir } from '../../support/temp-dir.ts';

const CALLS = 40;

const cleanups: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

test('forty 10 MB calls sent at once are each answered, and the service stays up', { timeout: 240_000 }, async () => {
  const dataDir = tempDir('large-bodies-');
  cleanups.push(async () => dataDir.remove());
  const service: ServiceProcess = await startService({
    DATA_DIR: dataDir.path,
    ADMIN_TOKEN,
    API_KEY_SECRET: 'large-bodies-api-key-secret-0123456789abcdef',
    // The heap `npm start` gives the service (HEAP_MAX_MB), with the TypeScript loader in it too.
    NODE_OPTIONS: '--max-old-space-size=256',
  });
  cleanups.push(() => service.kill9());
  const post = async (path: string, headers: Record<string, string>, body: string) => {
    const res = await fetch(`${service.url}${path}`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body,
    }).catch((error: unknown) => {
      throw new Error(`POST ${path}: ${String(error)}; the service:\n${service.output().slice(-2000)}`);
    });
    return { status: res.status, retryAfter: res.headers.get('retry-after'), text: await res.text() };
  };
  const admin = async (path: string, body: unknown) => {
    const res = await post(path, { authorization: `Bearer ${ADMIN_TOKEN}` }, JSON.stringify(body));
    assert.ok(res.status < 300, `${path}: ${res.status} ${res.text}`);
    return JSON.parse(res.text) as Record<string, string>;
  };
  const { teamId } = await admin('/api/admin/teams', {
    name: 'Large bodies',
    ownerEmail: 'o@large.test',
    capacityHours: 100_000,
  });
  const keys = await Promise.all(
    Array.from(
      { length: 2 },
      async (_, i) => (await admin(`/api/admin/teams/${teamId}/keys`, { label: `k${i}` })).key!,
    ),
  );
  // Just under the 10 MB limit; the transcript is kept to its first 500 KB.
  const body = JSON.stringify({ transcript: `Rep: ${'word '.repeat(Math.floor((10 * 1024 * 1024 - 100) / 5))}` });
  const answers = await Promise.all(
    Array.from({ length: CALLS }, (_, i) =>
      post('/api/integrations/push-api/ingest', { 'x-api-key': keys[i % keys.length]! }, body),
    ),
  );
  const byStatus = Object.groupBy(answers, (answer) => String(answer.status));
  assert.deepEqual(
    Object.keys(byStatus).filter((status) => status !== '201' && status !== '503'),
    [],
    answers.map((a) => `${a.status} ${a.text.slice(0, 200)}`).join('\n'),
  );
  for (const refused of byStatus['503'] ?? []) assert.equal(refused.retryAfter, '1', refused.text);
  assert.ok((byStatus['201'] ?? []).length > 0, 'some were accepted');
  console.log(
    `# ${CALLS} bodies of ${body.length} bytes: ${(byStatus['201'] ?? []).length} × 201, ${(byStatus['503'] ?? []).length} × 503`,
  );
  // A team whose 10 MB bodies arrive a byte at a time holds at most half the budget: another team's
  // call still goes through at once.
  const { teamId: slowTeam } = await admin('/api/admin/teams', {
    name: 'Slow bodies',
    ownerEmail: 'o@slow.test',
    capacityHours: 100,
  });
  const slowKey = (await admin(`/api/admin/teams/${slowTeam}/keys`, { label: 'slow' })).key!;
  const { port } = new URL(service.url);
  let slowAnswered = 0;
  const sockets = Array.from({ length: 6 }, () => {
    const socket = connect(Number(port), '127.0.0.1');
    socket.on('error', () => undefined);
    socket.once('data', () => slowAnswered++);
    socket.write(
      `POST /api/integrations/push-api/ingest HTTP/1.1\r\nHost: x\r\nX-API-Key: ${slowKey}\r\nContent-Type: application/json\r\nContent-Length: ${10 * 1024 * 1024}\r\n\r\n{`,
    );
    return socket;
  });
  try {
    await new Promise((resolve) => setTimeout(resolve, 500)); // their bodies are admitted, and trickle
    const started = performance.now();
    const small = await post(
      '/api/integrations/push-api/ingest',
      { 'x-api-key': keys[0]! },
      JSON.stringify({ transcript: 'Rep: hello' }),
    );
    assert.equal(small.status, 201, small.text);
    // Answered while the slow bodies still hold or wait for their room: it did not wait for them to
    // be refused.
    assert.equal(slowAnswered, 0, 'the slow bodies were answered first');
    console.log(
      `# a small call beside six slow 10 MB bodies of another team: 201 in ${Math.round(performance.now() - started)} ms`,
    );
  } finally {
    for (const socket of sockets) socket.destroy();
  }
  const ready = await fetch(`${service.url}/readyz`);
  assert.equal(ready.status, 200, await ready.text());
  assert.equal(await service.stop(), 0, `clean shutdown:\n${service.output().slice(-3000)}`);
});
