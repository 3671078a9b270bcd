/**
 * Calls near the size limits do not exhaust the service's memory: a burst of calls with 500 KB
 * transcripts, then a kill -9 and a restart that catches up with them, on the heap
 * `npm start` gives. Every read of the feed and of the log is bounded in bytes as well as in
 * events (FEED_READ_MAX_BYTES), and so is what the embedded store keeps parsed for its followers.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { eventually } from '../../support/eventually.ts';
import { ADMIN_TOKEN } from '../../support/ingress-harness.ts';
import { type ServiceProcess, startService } from '../../support/service-process.ts';
import { tempDir } from '../../support/temp-dir.ts';

const CALLS = 100;
/** About 500 KB, under the 512,000-byte transcript limit. */
const TRANSCRIPT = `Rep: ${'we talked about pricing, the pilot and the next step. '.repeat(9_200)}`;

const cleanups: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

test(
  'a burst of calls with 500 KB transcripts, then a restart that catches up with them, fits a small heap',
  { timeout: 300_000 },
  async () => {
    const dataDir = tempDir('large-calls-');
    cleanups.push(async () => dataDir.remove());
    const env = {
      DATA_DIR: dataDir.path,
      ADMIN_TOKEN,
      API_KEY_SECRET: 'large-calls-api-key-secret-0123456789abcdef',
      // What `npm start` gives the service (HEAP_MAX_MB, 256 MB), with the TypeScript loader in it too.
      NODE_OPTIONS: '--max-old-space-size=256',
    };
    let service: ServiceProcess = await startService(env);
    cleanups.push(() => service.kill9());
    const call = async (method: string, path: string, headers: Record<string, string>, body?: unknown) => {
      const res = await fetch(`${service.url}${path}`, {
        method,
        headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }).catch((error: unknown) => {
        throw new Error(`${method} ${path}: ${String(error)}; the service:\n${service.output().slice(-2000)}`);
      });
      const text = await res.text();
      return { status: res.status, text };
    };
    const admin = async (path: string, body: unknown) => {
      const res = await call('POST', path, { authorization: `Bearer ${ADMIN_TOKEN}` }, body);
      assert.ok(res.status < 300, `${path}: ${res.status} ${res.text}`);
      return JSON.parse(res.text) as Record<string, string>;
    };
    const { teamId } = await admin('/api/admin/teams', {
      name: 'Large calls',
      ownerEmail: 'o@large.test',
      capacityHours: 100_000,
    });
    // 30 requests a minute per key: a key for every 20 calls.
    const keys = await Promise.all(
      Array.from(
        { length: Math.ceil(CALLS / 20) },
        async (_, i) => (await admin(`/api/admin/teams/${teamId}/keys`, { label: `k${i}` })).key!,
      ),
    );
    const callIds = await Promise.all(
      Array.from({ length: CALLS }, async (_, i) => {
        const res = await call(
          'POST',
          '/api/integrations/push-api/ingest',
          { 'x-api-key': keys[i % keys.length]! },
          {
            transcript: TRANSCRIPT,
            callTitle: `large ${i}`,
            disableAiTitleGeneration: true,
          },
        );
        assert.equal(res.status, 201, res.text.slice(0, 500));
        return (JSON.parse(res.text) as { callId: string }).callId;
      }),
    );
    // Killed with the calls in flight; the restart reads them back from the feed and the log.
    await service.kill9();
    service = await startService(env);
    const key = keys[0]!;
    await eventually(
      async () => {
        assert.equal(service.child.exitCode, null, `the service exited:\n${service.output().slice(-3000)}`);
        const statuses = await Promise.all(
          callIds.map(async (id) => {
            const res = await call('GET', `/api/calls/${id}`, { 'x-api-key': key });
            return res.status === 200 ? (JSON.parse(res.text) as { status: string }).status : `HTTP ${res.status}`;
          }),
        );
        const unfinished = statuses.filter((status) => status !== 'completed');
        assert.equal(
          unfinished.length,
          0,
          `${unfinished.length} of ${CALLS} calls not completed: ${unfinished.slice(0, 5).join(', ')}`,
        );
      },
      { timeoutMs: 180_000, intervalMs: 1000 },
    );
    assert.equal(await service.stop(), 0, `clean shutdown:\n${service.output().slice(-3000)}`);
  },
);
