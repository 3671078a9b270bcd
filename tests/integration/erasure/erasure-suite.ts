/**
 * Erasure, end to end against the real service process (docs/decisions/0014-erasure-crypto-shredding.md):
 * a call with unique strings in its transcript, notes, rep e-mail, metadata and deal notes is
 * processed, erased with DELETE /api/calls/:callId, and then those strings are nowhere: in no topic
 * message (read through the admin topic reader), in no log line, and in the backend's own storage
 * (every file under DATA_DIR after a WAL checkpoint, or every row of every PostgreSQL table). A replay
 * of the call history brings no row back for it, and the call that was not erased is untouched.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { eventually } from '../../support/eventually.ts';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startService, type ServiceProcess } from '../../support/service-process.ts';
import { ADMIN_TOKEN } from '../../support/ingress-harness.ts';
import { TOPICS, topicNames } from '../../../shared/topics.ts';

export interface ErasureBackend {
  /** The service's environment (backends, DATA_DIR…). */
  env: Record<string, string>;
  /** Topic prefix of the deployment ('' for none). */
  topicPrefix: string;
  /** Where the backend's storage holds any of `needles`, after the service stopped (empty: nowhere). */
  storageHolding(needles: string[]): Promise<string[]>;
  /**
   * Where the storage holds any of `needles` while the service runs, as a copy of it taken then (a
   * backup, or what a kill -9 leaves) would.
   */
  storageHoldingWhileRunning: (needles: string[]) => Promise<string[]>;
  cleanup(): Promise<void>;
}

const admin = async (base: string, method: string, path: string, body?: unknown) => {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${ADMIN_TOKEN}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  assert.ok(res.ok, `${method} ${path}: ${res.status} ${await res.clone().text()}`);
  return res;
};

export const erasureProof = (name: string, factory: () => Promise<ErasureBackend>, options: { skip?: string } = {}) => {
  describe(`erasure proof: ${name}`, { skip: options.skip }, () => {
    let backend: ErasureBackend;
    let service: ServiceProcess | undefined;
    let key: string;
    const unique = randomUUID().replaceAll('-', '');
    const needles = {
      transcript: `Zanzibarquux${unique}`,
      notes: `Notesfrobnicate${unique}`,
      repEmail: `rep.${unique}@erasure.test`,
      metadata: `Metavalue${unique}`,
      dealNotes: `Dealnotes${unique}`,
      audioPath: `Recordingpath${unique}`,
    };
    let missing: Server;
    let missingPort: number;
    const erasedBody = {
      transcript: `Rep: Hello, this is the ${needles.transcript} plan we discussed.\nProspect: Sounds good, what does it cost?\nRep: Ten seats, we can start Monday.`,
      notes: `follow up ${needles.notes}`,
      repName: 'Erin Erasure',
      repEmail: needles.repEmail,
      metadata: { crm: needles.metadata },
      deal: { dealSize: 1200, notes: `deal ${needles.dealNotes}` },
      tags: ['erasure'],
    };
    let erasedId: string;
    let keptId: string;
    const api = (path: string, init: RequestInit = {}) =>
      fetch(`${service!.url}${path}`, { ...init, headers: { 'x-api-key': key, ...(init.headers ?? {}) } });

    before(async () => {
      backend = await factory();
      // A recording host that has nothing: an audio call fails audio_not_found, its URL in the failure's reason.
      missing = createServer((_request, response) => response.writeHead(404).end());
      await new Promise<void>((resolve) => missing.listen(0, '127.0.0.1', resolve));
      missingPort = (missing.address() as AddressInfo).port;
      service = await startService({
        ...backend.env,
        ADMIN_TOKEN,
        LOG_LEVEL: 'debug',
        AUDIO_FETCH_ALLOW_PRIVATE: 'true',
        AUDIO_ALLOWED_PORTS: `80,443,${missingPort}`,
      });
      const team = (await (
        await admin(service.url, 'POST', '/api/admin/teams', {
          name: `Erasure ${unique}`,
          ownerEmail: 'owner@erasure.test',
          ownerName: 'Olive Owner',
          capacityHours: 100,
        })
      ).json()) as { teamId: string };
      key = (
        (await (
          await admin(service.url, 'POST', `/api/admin/teams/${team.teamId}/keys`, { label: 'erasure' })
        ).json()) as { key: string }
      ).key;
    });
    after(async () => {
      await service?.stop().catch(() => undefined);
      await new Promise((resolve) => missing?.close(resolve));
      await backend?.cleanup();
    });

    const ingest = async (body: unknown) => {
      const res = await api('/api/integrations/push-api/ingest', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      assert.equal(res.status, 201, await res.clone().text());
      return ((await res.json()) as { callId: string }).callId;
    };
    const completed = (callId: string) =>
      eventually(
        async () => {
          const res = await api(`/api/calls/${callId}`);
          const call = (await res.json()) as { status?: string; deal?: unknown };
          if (call.status !== 'completed' || !call.deal)
            throw new Error(`call ${callId}: ${JSON.stringify(call).slice(0, 200)}`);
          return call;
        },
        { timeoutMs: 30_000, intervalMs: 50 },
      );

    test('DELETE answers 202 erased; the call is gone from GET, the list and search; a second DELETE is a 404', async () => {
      erasedId = await ingest(erasedBody);
      keptId = await ingest({
        transcript: 'Rep: Hi.\nProspect: Hello there.',
        repName: 'Kim Kept',
        repEmail: 'kim@erasure.test',
        notes: 'kept notes',
        deal: { dealSize: 5 },
      });
      const before = await completed(erasedId);
      assert.equal(
        (before as { notes?: string }).notes,
        erasedBody.notes,
        'the call reads in clear before its erasure',
      );
      await completed(keptId);

      const res = await api(`/api/calls/${erasedId}`, { method: 'DELETE' });
      assert.equal(res.status, 202, await res.clone().text());
      assert.deepEqual(await res.json(), { callId: erasedId, status: 'erased' });

      await eventually(
        async () => {
          const get = await api(`/api/calls/${erasedId}`);
          if (get.status !== 404) throw new Error(`GET answered ${get.status}`);
        },
        { timeoutMs: 10_000, intervalMs: 50 },
      );
      const list = (await (await api('/api/calls?limit=100')).json()) as { calls: { callId: string }[] };
      assert.deepEqual(
        list.calls.map((c) => c.callId),
        [keptId],
      );
      const search = (await (await api('/api/calls?search=Erin')).json()) as { calls: unknown[] };
      assert.equal(search.calls.length, 0);
      assert.equal(
        (
          (await api(`/api/calls?repEmail=${encodeURIComponent(needles.repEmail)}`).then((r) => r.json())) as {
            calls: unknown[];
          }
        ).calls.length,
        0,
      );
      // An audio call whose recording is not there (its URL in the failure), erased after it failed.
      const audioId = await ingest({
        audioUrl: `http://127.0.0.1:${missingPort}/${needles.audioPath}.wav`,
        repName: 'Erin Erasure',
      });
      await eventually(
        async () => {
          const call = (await (await api(`/api/calls/${audioId}`)).json()) as {
            status?: string;
            statusReason?: string;
          };
          if (call.status !== 'failed') throw new Error(`audio call ${call.status}`);
          assert.ok(call.statusReason?.includes(needles.audioPath), 'the reason names the URL before the erasure');
        },
        { timeoutMs: 15_000, intervalMs: 50 },
      );
      // Its download has failed at least once, and the failure was logged.
      await eventually(
        async () => {
          if (
            !service!
              .output()
              .split('\n')
              .some((line) => line.includes(audioId) && /step failed|call failed/.test(line))
          )
            throw new Error('no failed download logged yet');
        },
        { timeoutMs: 15_000, intervalMs: 50 },
      );
      assert.equal((await api(`/api/calls/${audioId}`, { method: 'DELETE' })).status, 202);
      await eventually(
        async () => {
          if ((await api(`/api/calls/${audioId}`)).status !== 404) throw new Error('audio call still shown');
        },
        { timeoutMs: 10_000, intervalMs: 50 },
      );
      const again = await api(`/api/calls/${erasedId}`, { method: 'DELETE' });
      assert.equal(again.status, 404);
      assert.match(String(again.headers.get('content-type')), /problem\+json/);
      // Another team's key, or an unknown call: 404 too.
      assert.equal((await api(`/api/calls/${randomUUID()}`, { method: 'DELETE' })).status, 404);
      assert.equal((await api(`/api/calls/${keptId}`)).status, 200);
    });

    test('a replay of the call history after the erasure has no row for the erased call', async () => {
      const res = await admin(service!.url, 'POST', '/api/admin/projections/call-history/replay');
      const progress = await res.text();
      assert.match(progress, /"phase":"activated"|"phase":"done"/, progress);
      assert.equal((await api(`/api/calls/${erasedId}`)).status, 404);
      assert.equal((await api(`/api/calls/${keptId}`)).status, 200);
    });

    test('no topic message holds the personal data; calls.events.v1 says call.erased without it', async () => {
      const topics = topicNames(backend.topicPrefix);
      let erasedEvent: { headers: Record<string, string>; value: unknown } | undefined;
      for (const topic of Object.values(topics)) {
        const res = await fetch(`${service!.url}/api/admin/topics/${encodeURIComponent(topic)}/messages?limit=1000`, {
          headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        });
        if (res.status === 404) continue; // a topic nothing was written to
        const text = await res.text();
        for (const [field, needle] of Object.entries(needles))
          assert.ok(!text.includes(needle), `${topic} holds the ${field}`);
        const { messages } = JSON.parse(text) as {
          messages: { key: string; headers: Record<string, string>; value: unknown }[];
        };
        if (topic === topics.callEvents)
          erasedEvent = messages.find((m) => m.key === erasedId && m.headers.ce_type === 'call.erased');
        if (topic === topics.callsSubmitted)
          assert.ok(
            messages.some((m) => m.key === keptId),
            'the reader sees the topic',
          );
      }
      assert.ok(erasedEvent, 'call.erased is on calls.events.v1');
      assert.deepEqual(Object.keys(erasedEvent.value as object).sort(), ['at', 'cause']);
      assert.equal((erasedEvent.value as { cause: string }).cause, 'deleted');
      assert.equal(TOPICS.callEvents, 'calls.events.v1');
    });

    test('while the service runs, its storage holds none of the personal data once the erasure is done', async () => {
      await eventually(
        async () => assert.deepEqual(await backend.storageHoldingWhileRunning(Object.values(needles)), []),
        {
          timeoutMs: 15_000,
          intervalMs: 250,
        },
      );
    });

    test('after the service stops, no log line and nothing in storage holds the personal data', async () => {
      const code = await service!.stop();
      const output = service!.output();
      service = undefined;
      assert.equal(code, 0, output.slice(-2000));
      assert.ok(output.includes(erasedId), 'the log speaks of the erased call (by id)');
      for (const [field, needle] of Object.entries(needles))
        assert.ok(!output.includes(needle), `a log line holds the ${field}`);
      assert.deepEqual(await backend.storageHolding(Object.values(needles)), []);
    });
  });
};
