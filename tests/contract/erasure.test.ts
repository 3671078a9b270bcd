/**
 * Erasure and retention (docs/decisions/0014-erasure-crypto-shredding.md), on the embedded default
 * and on Kafka + PostgreSQL: DELETE /api/calls/:callId (any state; a pending call stops and its
 * reservation is released), call.erased on calls.events.v1, retention periods, and erasure
 * requests by e-mail. Personal fields are sealed in what is stored and published.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { idempotencyIdOf } from '../../services/ingress/ingest-route.ts';
import { idempotencyEvents, idempotencyStreamId } from '../../shared/domain/idempotency/idempotency-decider.ts';
import { type EmbeddedPipeline, openEmbeddedPipeline } from '../support/embedded-pipeline.ts';
import type { PipelineOptions } from '../support/pipeline-harness.ts';
import { openServersPipeline, serversSkip } from '../support/servers-pipeline.ts';
import { audioServer, type PipelineHarness } from '../support/pipeline-harness.ts';
import { eventually } from '../support/eventually.ts';

const TRANSCRIPT = 'Rep: Hi Dana, thanks for joining.\nDana: Happy to be here, tell me about pricing.';
const DAY_MS = 86_400_000;

const erasureContract = (
  name: string,
  openPipeline: (options: PipelineOptions) => Promise<EmbeddedPipeline>,
  skip?: string,
) =>
  describe(`erasure and retention: ${name}`, { skip }, () => {
    let pipeline: EmbeddedPipeline;
    let h: PipelineHarness;
    let clockOffsetMs = 0;
    before(async () => {
      pipeline = await openPipeline({ erasure: true, now: () => new Date(Date.now() + clockOffsetMs) });
      h = pipeline.h;
    });
    after(async () => {
      await pipeline?.close();
    });

    const request = (method: 'GET' | 'DELETE', url: string, key?: string) =>
      h.ingress.app.inject({ method, url, headers: key ? { 'x-api-key': key } : {} });
    const submit = async (key: string, body: Record<string, unknown>) => {
      const accepted = await h.ingest({ key, body });
      assert.equal(accepted.statusCode, 201, accepted.body);
      return accepted.json<{ callId: string }>().callId;
    };
    const gone = (key: string, callId: string) =>
      eventually(
        async () => {
          const res = await request('GET', `/api/calls/${callId}`, key);
          if (res.statusCode !== 404) throw new Error(`GET ${callId} answered ${res.statusCode}`);
        },
        { timeoutMs: 15_000, intervalMs: 20 },
      );
    /** The call as the read API shows it once it has finished (the call history follows the store). */
    const shown = (key: string, callId: string) =>
      eventually(
        async () => {
          const res = await request('GET', `/api/calls/${callId}`, key);
          if (res.statusCode !== 200) throw new Error(`GET ${callId} answered ${res.statusCode}`);
          const call = res.json<{ status: string }>();
          if (call.status === 'pending') throw new Error(`call ${callId} still pending`);
          return call;
        },
        { timeoutMs: 15_000, intervalMs: 20 },
      );

    /** An erasure request made now for `email`, once completed (its view). */
    const erasureCompleted = async (teamId: string, email: string) => {
      const accepted = await h.admin('POST', `/api/admin/teams/${teamId}/erasures`, { email });
      assert.equal(accepted.statusCode, 202, `${email}: ${accepted.body}`);
      const { erasureId } = accepted.json<{ erasureId: string }>();
      return eventually(
        async () => {
          const res = await h.admin('GET', `/api/admin/teams/${teamId}/erasures/${erasureId}`);
          assert.equal(res.statusCode, 200, res.body);
          const body = res.json<{ erasureId: string; status: string; calls: string[]; failed: unknown[] }>();
          if (body.status !== 'completed') throw new Error(`erasure ${body.status}`);
          return body;
        },
        { timeoutMs: 15_000, intervalMs: 50 },
      );
    };

    test('DELETE: 202 erased, then 404 for GET, the list and a second DELETE; only the call team may; the events are sealed and call.erased is published', async () => {
      const { key } = await h.team();
      const other = await h.team();
      const callId = await submit(key, {
        transcript: TRANSCRIPT,
        notes: 'private note',
        repName: 'Dana Reyes',
        repEmail: 'dana@acme.test',
      });
      await h.callEvents(callId);
      assert.equal((await shown(key, callId)).status, 'completed');
      // What is stored holds no personal field in clear.
      const stored = JSON.stringify((await pipeline.storedEvents!.readStream(`call-${callId}`)).map((e) => e.data));
      for (const secret of ['private note', 'dana@acme.test', 'thanks for joining'])
        assert.ok(!stored.includes(secret), secret);

      assert.equal((await request('DELETE', `/api/calls/${callId}`)).statusCode, 401);
      assert.equal((await request('DELETE', `/api/calls/${callId}`, other.key)).statusCode, 404);
      const erased = await request('DELETE', `/api/calls/${callId}`, key);
      assert.equal(erased.statusCode, 202, erased.body);
      assert.deepEqual(erased.json(), { callId, status: 'erased' });
      await gone(key, callId);
      assert.deepEqual(JSON.parse((await request('GET', '/api/calls', key)).body).calls, []);
      const again = await request('DELETE', `/api/calls/${callId}`, key);
      assert.equal(again.statusCode, 404);
      assert.equal(again.json<{ code: string }>().code, 'NOT_FOUND');
      // The stream still reads (the personal fields as erased placeholders) and ends with CallErased.
      const events = await h.eventStore.readStream(`call-${callId}`);
      assert.equal(events.at(-1)!.type, 'CallErased');
      assert.ok(!JSON.stringify(events.map((e) => e.data)).includes('private note'));

      const relayed = await eventually(
        async () => {
          const records = await h.eventLog.read(h.topics.callEvents, { limit: 100_000 });
          const record = records.find((r) => r.key === callId && r.headers.ce_type === 'call.erased');
          if (!record) throw new Error('no call.erased yet');
          return { record, all: records.filter((r) => r.key === callId) };
        },
        { timeoutMs: 15_000, intervalMs: 50 },
      );
      assert.deepEqual(Object.keys(JSON.parse(relayed.record.value)).sort(), ['at', 'cause']);
      for (const record of relayed.all)
        assert.ok(
          !record.value.includes('private note') && !record.value.includes('dana@acme.test'),
          record.headers.ce_type,
        );
    });

    test('Idempotency-Key: the 201 is stored without its warnings (they may quote personal data) and replayed with them; once the call is erased a replay is 404, also from a record of an earlier version', async () => {
      const { key, keyId } = await h.team();
      const personal = 'Dana Reyes SSN 078-05-1120';
      const body = { transcript: TRANSCRIPT, [personal]: 'x' };
      const send = (idempotencyKey: string) => h.ingest({ key, body, headers: { 'idempotency-key': idempotencyKey } });
      const first = await send('crm-erase-1');
      assert.equal(first.statusCode, 201, first.body);
      const { callId, warnings } = first.json<{ callId: string; warnings: string[] }>();
      assert.ok(
        warnings.some((w) => w.includes(personal)),
        warnings.join(),
      );
      const again = await send('crm-erase-1');
      assert.equal(again.statusCode, 201, again.body);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.deepEqual(again.json(), first.json(), 'the replay has the warnings, from its own body');
      const idempotencyRecords = async () =>
        JSON.stringify(
          (await pipeline.storedEvents!.readAll({ categories: ['idempotency'], maxCount: 100_000 })).map((e) => e.data),
        );
      assert.ok((await idempotencyRecords()).includes(callId));
      assert.ok(!(await idempotencyRecords()).includes('078-05-1120'), 'no personal text in the idempotency record');

      // A key whose 201 an earlier version stored whole, warnings included, for the same call.
      const at = new Date(Date.now() + clockOffsetMs).toISOString();
      await h.eventStore.append(
        idempotencyStreamId(idempotencyIdOf(keyId, 'crm-erase-old')),
        [
          idempotencyEvents.encode({
            type: 'IdempotencyKeyClaimed',
            data: { bodyHash: createHash('sha256').update(JSON.stringify(body)).digest('hex'), at, callId },
          }),
          idempotencyEvents.encode({ type: 'IdempotentResponseStored', data: { status: 201, body: first.json(), at } }),
        ],
        { expectedVersion: 'no_stream' },
      );
      const old = await send('crm-erase-old');
      assert.equal(old.statusCode, 201, old.body);
      assert.deepEqual(old.json(), first.json());

      await shown(key, callId);
      assert.equal((await request('DELETE', `/api/calls/${callId}`, key)).statusCode, 202);
      await gone(key, callId);
      const submitted = async () => (await h.eventLog.read(h.topics.callsSubmitted, { limit: 100_000 })).length;
      const submittedBefore = await submitted();
      for (const idempotencyKey of ['crm-erase-1', 'crm-erase-old']) {
        const replay = await send(idempotencyKey);
        assert.equal(replay.statusCode, 404, `${idempotencyKey}: ${replay.body}`);
        assert.equal(replay.json<{ code: string }>().code, 'NOT_FOUND');
        assert.equal(replay.headers['idempotent-replayed'], undefined);
        assert.ok(!replay.body.includes('078-05-1120'), replay.body);
      }
      assert.equal(await submitted(), submittedBefore, 'no call submitted again');
    });

    test('a call still processing is erased: it stops, nothing follows CallErased, and its capacity reservation is released', async () => {
      const { key, teamId } = await h.team({ capacityHours: 10 });
      const slow = await audioServer({ body: Buffer.from('RIFF'), delayMs: 2_000 });
      try {
        const callId = await submit(key, { audioUrl: slow.url, repName: 'Pat Pending' });
        await h.callEvents(callId, (events) => events.some((e) => e.type === 'ProcessingStarted'));
        const reserved = (await h.admin('GET', `/api/admin/teams/${teamId}`)).json<{
          capacity: { remainingMinutes: number; reservedCalls: number };
        }>().capacity;
        assert.equal(reserved.reservedCalls, 1);
        const erased = await request('DELETE', `/api/calls/${callId}`, key);
        assert.equal(erased.statusCode, 202, erased.body);
        const team = (await h.admin('GET', `/api/admin/teams/${teamId}`)).json<{
          capacity: { remainingMinutes: number; reservedCalls: number };
        }>().capacity;
        assert.deepEqual(team, { ...team, remainingMinutes: 600, reservedCalls: 0 });
        await gone(key, callId);
        // The download finishes after the erasure: its result is refused, nothing is appended.
        await new Promise((resolve) => setTimeout(resolve, 2_500));
        const events = await h.eventStore.readStream(`call-${callId}`);
        assert.equal(events.at(-1)!.type, 'CallErased', events.map((e) => e.type).join(', '));
      } finally {
        await slow.close();
      }
    });

    test('a call accepted but not yet stored (no processor running) is erased once it lands, not answered 404', async () => {
      const { key } = await h.team();
      await h.stopProcessor();
      let callId: string;
      try {
        callId = await submit(key, { transcript: TRANSCRIPT, notes: 'just accepted' });
        const erasing = request('DELETE', `/api/calls/${callId}`, key);
        await h.startProcessor();
        const erased = await erasing;
        assert.equal(erased.statusCode, 202, erased.body);
      } finally {
        if (!h.processor) await h.startProcessor();
      }
      await gone(key, callId);
      const events = await h.eventStore.readStream(`call-${callId}`);
      assert.deepEqual(events.map((e) => e.type).at(-1), 'CallErased');
    });

    test('a call accepted but still not stored after the wait is a 503 with Retry-After, not a 404; the retry once it is stored erases it', async () => {
      const { key } = await h.team();
      await h.stopProcessor();
      let callId: string;
      try {
        callId = await submit(key, { transcript: TRANSCRIPT, notes: 'accepted, not stored' });
        const refused = await request('DELETE', `/api/calls/${callId}`, key);
        assert.equal(refused.statusCode, 503, refused.body);
        assert.match(String(refused.headers['content-type']), /^application\/problem\+json/);
        assert.ok(Number(refused.headers['retry-after']) >= 1, String(refused.headers['retry-after']));
        const problem = refused.json<{ code: string; detail: string }>();
        assert.equal(problem.code, 'SERVICE_UNAVAILABLE');
        assert.match(problem.detail, /accepted but is not stored yet/);
        assert.match(problem.detail, /nothing was erased/);
      } finally {
        await h.startProcessor();
      }
      const erased = await eventually(
        async () => {
          const res = await request('DELETE', `/api/calls/${callId}`, key);
          if (res.statusCode !== 202) throw new Error(`DELETE answered ${res.statusCode}`);
          return res;
        },
        { timeoutMs: 30_000, intervalMs: 100 },
      );
      assert.deepEqual(erased.json(), { callId, status: 'erased' });
      await gone(key, callId);
      const events = await h.eventStore.readStream(`call-${callId}`);
      assert.equal(events.at(-1)!.type, 'CallErased');
    });

    test('a CallErased whose key was not destroyed (the erasing process stopped in between) has its key destroyed by the projections', async () => {
      const { key } = await h.team();
      const callId = await submit(key, { transcript: TRANSCRIPT, notes: 'left behind' });
      await shown(key, callId);
      // As if the erasing request appended CallErased and died before destroying the key.
      await h.eventStore.append(
        `call-${callId}`,
        [{ type: 'CallErased', data: { cause: 'deleted', at: new Date().toISOString() } }],
        { expectedVersion: 'stream_exists' },
      );
      await gone(key, callId);
      await eventually(
        async () => {
          const [submitted] = await h.eventStore.readStream(`call-${callId}`, { maxCount: 1 });
          const data = submitted!.data as { submission: { notes?: string; transcript: { text: string } } };
          if (data.submission.notes !== undefined || data.submission.transcript.text !== '')
            throw new Error('the key still opens the call');
        },
        { timeoutMs: 15_000, intervalMs: 50 },
      );
    });

    test('retention: calls submitted longer ago than the team period are erased; null keeps them; bad periods are refused', async () => {
      const { key, teamId } = await h.team();
      const old = await submit(key, { transcript: TRANSCRIPT, repName: 'Olga Old' });
      await h.callEvents(old);
      await shown(key, old);
      clockOffsetMs = 2 * DAY_MS;
      try {
        const recent = await submit(key, { transcript: TRANSCRIPT, repName: 'Rita Recent' });
        await h.callEvents(recent);
        await shown(key, recent);
        assert.equal((await h.admin('POST', `/api/admin/teams/${teamId}/retention`, { days: 0 })).statusCode, 400);
        assert.equal((await h.admin('POST', '/api/admin/teams/nope/retention', { days: 1 })).statusCode, 404);
        const kept = await h.admin('POST', `/api/admin/teams/${teamId}/retention`, { days: null });
        assert.deepEqual(kept.json(), { teamId, retentionDays: null });
        assert.deepEqual(await h.ingress.retention!.sweep(), { erased: 0, failed: 0 });
        const set = await h.admin('POST', `/api/admin/teams/${teamId}/retention`, { days: 1 });
        assert.equal(set.statusCode, 200, set.body);
        assert.deepEqual(set.json(), { teamId, retentionDays: 1 });
        await eventually(
          async () => {
            await h.ingress.retention!.sweep();
            await gone(key, old);
          },
          { timeoutMs: 15_000, intervalMs: 50 },
        );
        assert.equal((await shown(key, recent)).status, 'completed');
        const events = await h.eventStore.readStream(`call-${old}`);
        assert.equal(events.at(-1)!.type, 'CallErased');
        assert.equal((events.at(-1)!.data as { cause: string }).cause, 'retention');
      } finally {
        clockOffsetMs = 0;
      }
    });

    test('an erasure request by e-mail erases the calls whose rep e-mail or attributed member is that address', async () => {
      const { key, teamId } = await h.team();
      assert.equal(
        (await h.admin('POST', `/api/admin/teams/${teamId}/members`, { email: 'dana@acme.test', name: 'Dana Reyes' }))
          .statusCode,
        201,
      );
      const byRep = await submit(key, { transcript: TRANSCRIPT, repEmail: 'DANA@acme.test' });
      const other = await submit(key, { transcript: TRANSCRIPT, repEmail: 'sam@acme.test' });
      const noRep = await submit(key, { transcript: TRANSCRIPT });
      for (const callId of [byRep, other, noRep]) await shown(key, callId);

      assert.equal(
        (await h.admin('POST', `/api/admin/teams/${teamId}/erasures`, { email: 'not an address' })).statusCode,
        400,
      );
      const done = await erasureCompleted(teamId, 'dana@acme.test');
      const { erasureId } = done;
      assert.deepEqual(done.calls, [byRep]);
      assert.deepEqual(done.failed, []);
      await gone(key, byRep);
      for (const callId of [other, noRep]) await shown(key, callId);
      assert.equal(
        (await h.admin('GET', `/api/admin/teams/${teamId}/erasures/00000000-0000-4000-8000-000000000000`)).statusCode,
        404,
      );
      const otherTeam = await h.team();
      assert.equal(
        (await h.admin('GET', `/api/admin/teams/${otherTeam.teamId}/erasures/${erasureId}`)).statusCode,
        404,
      );
    });

    test('an erasure request made while the processors are down misses no call accepted before it: 503 to retry, then it covers them', async () => {
      const { key, teamId } = await h.team();
      const email = `late-${teamId}@acme.test`;
      await h.stopProcessor();
      let restarted: Promise<unknown> | undefined;
      try {
        // Accepted (on the log, its reservation held) but not stored: nothing processes it.
        const callId = await submit(key, { transcript: TRANSCRIPT, repEmail: email });
        const refused = await h.admin('POST', `/api/admin/teams/${teamId}/erasures`, { email });
        assert.equal(refused.statusCode, 503, refused.body);
        assert.ok(refused.headers['retry-after']);
        assert.match(
          refused.json<{ detail: string }>().detail,
          /1 call\(s\) this team sent were accepted but are not in the call history yet/,
        );

        // The processors come back while the retry waits: the call is stored, and the request covers it.
        restarted = new Promise((resolve) => setTimeout(resolve, 500)).then(() => h.startProcessor());
        const done = await erasureCompleted(teamId, email);
        assert.deepEqual(done.calls, [callId]);
        await gone(key, callId);
      } finally {
        await (restarted ?? h.startProcessor());
      }
    });

    test('every rep e-mail a call may carry can be named in an erasure request, trimmed as the ingest trims it', async () => {
      const { key, teamId } = await h.team();
      // Addresses the ingest takes (the WHATWG rule browsers use) that a stricter format refused.
      const addresses = ['dana@localhost', 'j..doe@acme.test', '.lee@acme.test'];
      const calls = new Map<string, string>();
      for (const email of addresses) calls.set(email, await submit(key, { transcript: TRANSCRIPT, repEmail: email }));
      for (const callId of calls.values()) await shown(key, callId);
      for (const email of addresses) {
        const done = await erasureCompleted(teamId, ` ${email.toUpperCase()} `);
        assert.deepEqual(done.calls, [calls.get(email)], email);
        await gone(key, calls.get(email)!);
      }
      for (const [email, message] of [
        [42, 'must be an e-mail address'],
        ['not an address', 'must be an e-mail address'],
        ['   ', 'is required'],
      ] as const) {
        const refused = await h.admin('POST', `/api/admin/teams/${teamId}/erasures`, { email });
        assert.equal(refused.statusCode, 400, refused.body);
        const [error] = refused.json<{ errors: Array<{ field: string; message: string }> }>().errors;
        assert.equal(error!.field, 'email');
        assert.ok(error!.message.startsWith(message), `${JSON.stringify(email)}: ${error!.message}`);
      }
    });
  });

void erasureContract('embedded default (SQLite)', (options) => openEmbeddedPipeline({}, options));
void erasureContract('Kafka + PostgreSQL', (options) => openServersPipeline({}, options), serversSkip);
