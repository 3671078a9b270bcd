/**
 * The Push API contract, walked section by section (spec/push-api.md), against the ingress built on
 * real backends. `pushApiContract(name, factory)` runs once per backend pair.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { fromRecord } from '../../shared/cloudevents.ts';
import type { CallSubmittedData } from '../../shared/domain/call/call-submitted.ts';
import type { EventLog } from '../../shared/ports/event-log.ts';
import type { EventStore } from '../../shared/ports/event-store.ts';
import { ERROR_STATUS } from '../../services/ingress/errors.ts';
import { createHarness, type Harness } from '../support/ingress-harness.ts';

export interface Backends {
  eventStore: EventStore;
  eventLog: EventLog;
  /** An event log that cannot take records (closed, or pointing at nothing). */
  brokenEventLog(): Promise<EventLog>;
  cleanup(): Promise<void>;
}

const TRANSCRIPT = 'Rep: Hi Dana, thanks for joining. What are you using today?\nDana: A spreadsheet, honestly.';
const MB = 1024 * 1024;

type Json = Record<string, unknown>;
const problemOf = (body: string) =>
  JSON.parse(body) as {
    type: string;
    title: string;
    status: number;
    detail: string;
    code: string;
    errors?: { field: string; message: string }[];
  };
let addressCounter = 0;
/** A client address of its own, so the failed-authentication throttle of one test never touches another. */
const freshAddress = () =>
  `10.${Math.floor(++addressCounter / 250) % 250}.${addressCounter % 250}.${Math.floor(Math.random() * 250)}`;

export const pushApiContract = (name: string, factory: () => Promise<Backends>, options: { skip?: string } = {}) => {
  describe(`Push API contract: ${name}`, { skip: options.skip }, () => {
    let backends: Backends;
    let h: Harness;
    before(async () => {
      backends = await factory();
      h = await createHarness({ eventStore: backends.eventStore, eventLog: backends.eventLog });
    });
    after(async () => {
      await h?.close();
      await backends?.cleanup();
    });

    /** Submits and returns the CallSubmitted data written to the log. */
    const accepted = async (key: string, body: Json) => {
      const res = await h.ingest({ key, body });
      assert.equal(res.statusCode, 201, res.body);
      const record = await h.submitted(res.json<{ callId: string }>().callId);
      return fromRecord<CallSubmittedData>(record).data;
    };
    const rejected = async (key: string, body: Json, status = 400) => {
      const res = await h.ingest({ key, body });
      assert.equal(res.statusCode, status, res.body);
      assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
      return problemOf(res.body);
    };

    describe('endpoint rules', () => {
      test('rule 1: 400 when neither transcript nor audioUrl is present', async () => {
        const { key } = await h.team();
        for (const body of [{}, { repName: 'Dana' }, { transcript: '' }, { transcript: '   ', audio_url: '' }]) {
          const problem = await rejected(key, body);
          assert.equal(problem.code, 'VALIDATION_FAILED');
          assert.ok(
            problem.errors?.some((e) => /transcript/.test(e.field) && /audioUrl/.test(e.message)),
            JSON.stringify(problem.errors),
          );
        }
      });

      test('rule 2: 400 when a field value is invalid, naming each field and its rule', async () => {
        const { key } = await h.team();
        const problem = await rejected(key, {
          transcript: TRANSCRIPT,
          audioUrl: 'ftp://example.com/a.mp3',
          repEmail: 'not-an-email',
          callDate: 'yesterday',
          tags: 'demo',
          metadata: { nested: { no: true } },
          deal: { dealSize: -5 },
        });
        assert.equal(problem.status, 400);
        assert.equal(problem.type, 'urn:calls:problem:validation-failed');
        const fields = problem.errors!.map((e) => e.field);
        for (const field of ['audioUrl', 'repEmail', 'callDate', 'tags', 'metadata.nested', 'deal.dealSize']) {
          assert.ok(fields.includes(field), `errors name ${field}: ${JSON.stringify(problem.errors)}`);
        }
        for (const e of problem.errors!) assert.ok(e.message.length > 5, `message names the rule: ${e.message}`);
      });

      test('rule 3: 413 when the body is larger than 10 MB', async () => {
        const { key } = await h.team();
        const res = await h.ingest({ key, payload: JSON.stringify({ transcript: 'a'.repeat(10 * MB + 10) }) });
        assert.equal(res.statusCode, 413);
        assert.equal(problemOf(res.body).code, 'PAYLOAD_TOO_LARGE');
        assert.match(problemOf(res.body).detail, /10,485,760 bytes/, 'the detail states the limit');
        assert.deepEqual(problemOf(res.body).errors, [{ field: 'body', message: 'is larger than 10485760 bytes' }]);
        const justUnder = await h.ingest({ key, payload: JSON.stringify({ transcript: 'a'.repeat(10 * MB - 100) }) });
        assert.equal(justUnder.statusCode, 201, 'a body just under 10 MB is accepted');
      });

      test('rule 4: 401 when the key is missing or invalid', async () => {
        const { key } = await h.team();
        const remoteAddress = freshAddress();
        const missing = await h.ingest({ body: { transcript: TRANSCRIPT }, remoteAddress });
        assert.equal(missing.statusCode, 401);
        assert.equal(problemOf(missing.body).code, 'API_KEY_INVALID');
        assert.match(String(missing.headers['www-authenticate']), /Bearer/);
        const tampered = key.slice(0, -1) + (key.endsWith('A') ? 'B' : 'A');
        for (const bad of [tampered, 'pk_nothing', 'sk_live_123', key.replace('pk_', 'pk-')]) {
          const res = await h.ingest({ key: bad, body: { transcript: TRANSCRIPT }, remoteAddress });
          assert.equal(res.statusCode, 401, bad);
        }
      });

      test('rule 5: 402 when live call hours are exhausted; retry succeeds after capacity is added', async () => {
        const { teamId, key } = await h.team({ capacityHours: 0 });
        const problem = await rejected(key, { transcript: TRANSCRIPT }, 402);
        assert.equal(problem.code, 'CAPACITY_EXHAUSTED');
        assert.match(problem.detail, /auto-recharge/);
        const added = await h.admin('POST', `/api/admin/teams/${teamId}/capacity`, { addHours: 1 });
        assert.equal(added.statusCode, 200);
        assert.equal(added.json<{ remainingMinutes: number }>().remainingMinutes, 60);
        assert.equal((await h.ingest({ key, body: { transcript: TRANSCRIPT } })).statusCode, 201);
      });

      test('rule 5: after auto-recharge is enabled the request can be retried', async () => {
        const { teamId, key } = await h.team({ capacityHours: 0 });
        await rejected(key, { transcript: TRANSCRIPT }, 402);
        const set = await h.admin('POST', `/api/admin/teams/${teamId}/capacity`, {
          autoRecharge: { enabled: true, hours: 2 },
        });
        assert.equal(set.statusCode, 200);
        assert.deepEqual(set.json<Json>().autoRecharge, { enabled: true, blockMinutes: 120 });
        const call = await accepted(key, { transcript: TRANSCRIPT, duration: 600, durationUnit: 'seconds' });
        assert.equal(call.capacity.autoRechargedMinutes, 120);
        const team = (await h.admin('GET', `/api/admin/teams/${teamId}`)).json<{
          capacity: { remainingMinutes: number };
        }>();
        assert.equal(team.capacity.remainingMinutes, 110);
      });

      test('rule 6: 429 past 30 requests per minute for a key, with Retry-After', async () => {
        const { key } = await h.team();
        for (let i = 0; i < 30; i++) {
          const res = await h.ingest({ key, body: { transcript: `${TRANSCRIPT} ${i}` } });
          assert.equal(res.statusCode, 201, `request ${i + 1}`);
          assert.equal(res.headers['ratelimit-remaining'], String(29 - i));
        }
        const limited = await h.ingest({ key, body: { transcript: TRANSCRIPT } });
        assert.equal(limited.statusCode, 429);
        assert.equal(problemOf(limited.body).code, 'RATE_LIMITED');
        const retryAfter = Number(limited.headers['retry-after']);
        assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
        assert.equal(limited.headers['ratelimit-limit'], '30');
        const other = await h.team();
        assert.equal(
          (await h.ingest({ key: other.key, body: { transcript: TRANSCRIPT } })).statusCode,
          201,
          'another key has its own limit',
        );
      });

      test('rule 7: valid deal data travels with the call (aliases mapped into the deal)', async () => {
        const { key } = await h.team();
        const call = await accepted(key, {
          transcript: TRANSCRIPT,
          deal: { deal_size: '1200.50', notes: 'Signed' },
          revenue_collected: 300,
          dealDate: '2026-11-20',
        });
        assert.deepEqual(call.submission.deal, {
          dealSize: 1200.5,
          revenueCollected: 300,
          dealDate: '2026-11-20T00:00:00.000Z',
          notes: 'Signed',
        });
      });

      test('201 body: callId and status context; the record is on the log when 201 is answered', async () => {
        const { teamId, key } = await h.team();
        const res = await h.ingest({ key, body: { transcript: TRANSCRIPT } });
        assert.equal(res.statusCode, 201);
        const body = res.json<Json>();
        assert.match(String(body.callId), /^[0-9a-f-]{36}$/);
        assert.deepEqual(
          { ...body, callId: 'x' },
          {
            callId: 'x',
            status: 'pending',
            processingTriggered: true,
            processingError: null,
            statusReason: 'queued_for_processing',
            warnings: [],
          },
        );
        const records = await h.eventLog.read('calls.submitted.v1', { limit: 100_000 });
        const record = records.find((r) => r.key === body.callId);
        assert.ok(record, 'CallSubmitted is durable before 201');
        const event = fromRecord<CallSubmittedData>(record);
        assert.equal(event.id, body.callId);
        assert.equal(event.type, 'call.submitted');
        assert.equal(event.data.teamId, teamId);
      });

      test('no deduplication: the same body twice gives two calls', async () => {
        const { key } = await h.team();
        const body = { transcript: TRANSCRIPT, callTitle: 'Same' };
        const [a, b] = [await h.ingest({ key, body }), await h.ingest({ key, body })];
        assert.equal(a.statusCode, 201);
        assert.equal(b.statusCode, 201);
        assert.notEqual(a.json<Json>().callId, b.json<Json>().callId);
      });

      test('Idempotency-Key: the same key and body replay the first 201; another body is a 422', async () => {
        const { key } = await h.team();
        const body = { transcript: TRANSCRIPT, callTitle: 'Once' };
        const first = await h.ingest({ key, body, headers: { 'idempotency-key': 'sync-42' } });
        assert.equal(first.statusCode, 201);
        const again = await h.ingest({ key, body, headers: { 'idempotency-key': 'sync-42' } });
        assert.equal(again.statusCode, 201);
        assert.equal(again.headers['idempotent-replayed'], 'true');
        assert.deepEqual(again.json(), first.json());
        const records = (await h.eventLog.read('calls.submitted.v1', { limit: 100_000 })).filter(
          (r) => r.key === first.json<{ callId: string }>().callId,
        );
        assert.equal(records.length, 1, 'one call on the log');
        const other = await h.ingest({
          key,
          body: { ...body, callTitle: 'Twice' },
          headers: { 'idempotency-key': 'sync-42' },
        });
        assert.equal(other.statusCode, 422);
        assert.equal(problemOf(other.body).code, 'IDEMPOTENCY_KEY_REUSED');
        const otherKey = await h.ingest({ key, body, headers: { 'idempotency-key': 'sync-43' } });
        assert.notEqual(otherKey.json<{ callId: string }>().callId, first.json<{ callId: string }>().callId);
      });

      test('Idempotency-Key: a request that failed does not hold its key; a malformed key is a 400', async () => {
        const { key } = await h.team();
        const bad = await h.ingest({ key, body: { transcript: '' }, headers: { 'idempotency-key': 'retry-me' } });
        assert.equal(bad.statusCode, 400);
        const fixed = await h.ingest({ key, body: { transcript: '' }, headers: { 'idempotency-key': 'retry-me' } });
        assert.equal(fixed.statusCode, 400, 'the same failing body fails again rather than replaying');
        assert.equal(
          (await h.ingest({ key, body: { transcript: TRANSCRIPT }, headers: { 'idempotency-key': 'retry-me' } }))
            .statusCode,
          201,
        );
        const malformed = await h.ingest({
          key,
          body: { transcript: TRANSCRIPT },
          headers: { 'idempotency-key': 'has spaces in it' },
        });
        assert.equal(malformed.statusCode, 400);
        assert.equal(problemOf(malformed.body).errors![0]!.field, 'Idempotency-Key');
      });

      test('Idempotency-Key: after its 24 hours a key is free again and names a new call, with the new body', async () => {
        const { key } = await h.team();
        const first = await h.ingest({
          key,
          body: { transcript: TRANSCRIPT, callTitle: 'Monday' },
          headers: { 'idempotency-key': 'crm-deal-9' },
        });
        assert.equal(first.statusCode, 201, first.body);
        // The same backends, served by an ingress whose clock is a day and a second ahead.
        const dayLater = await createHarness({
          eventStore: backends.eventStore,
          eventLog: backends.eventLog,
          now: () => new Date(Date.now() + 24 * 60 * 60 * 1000 + 1000),
        });
        try {
          const again = await dayLater.ingest({
            key,
            body: { transcript: TRANSCRIPT, callTitle: 'Tuesday' },
            headers: { 'idempotency-key': 'crm-deal-9' },
          });
          assert.equal(again.statusCode, 201, again.body);
          assert.equal(again.headers['idempotent-replayed'], undefined);
          const callId = again.json<{ callId: string }>().callId;
          assert.notEqual(callId, first.json<{ callId: string }>().callId);
          const record = await dayLater.submitted(callId);
          assert.equal(fromRecord<CallSubmittedData>(record).data.submission.callTitle, 'Tuesday');
        } finally {
          await dayLater.close();
        }
      });

      test('Idempotency-Key: concurrent requests with one key create one call', async () => {
        const { key } = await h.team();
        const body = { transcript: TRANSCRIPT };
        const responses = await Promise.all(
          Array.from({ length: 5 }, () => h.ingest({ key, body, headers: { 'idempotency-key': 'burst' } })),
        );
        const created = new Set(
          responses.filter((r) => r.statusCode === 201).map((r) => r.json<{ callId: string }>().callId),
        );
        assert.equal(created.size, 1, `one call id: ${responses.map((r) => r.statusCode)}`);
        for (const r of responses)
          assert.ok(r.statusCode === 201 || (r.statusCode === 409 && problemOf(r.body).code === 'CONFLICT'), r.body);
      });

      test("GET /api/usage: capacity left and reserved, and the key's ingest limit as it stands, reading it spends nothing", async () => {
        const { key } = await h.team({ capacityHours: 10 });
        const usage = async () => {
          const res = await h.ingress.app.inject({ method: 'GET', url: '/api/usage', headers: { 'x-api-key': key } });
          assert.equal(res.statusCode, 200, res.body);
          return res.json<{
            teamId: string;
            remainingMinutes: number;
            reservedMinutes: number;
            usedMinutes: number;
            autoRecharge: unknown;
            rateLimit: { limit: number; remaining: number; resetSeconds: number };
          }>();
        };
        const fresh = await usage();
        assert.deepEqual(
          { ...fresh, teamId: undefined },
          {
            teamId: undefined,
            remainingMinutes: 600,
            reservedMinutes: 0,
            usedMinutes: 0,
            autoRecharge: { enabled: false, hours: 0 },
            rateLimit: { limit: 30, remaining: 30, resetSeconds: 0 },
          },
        );
        const first = await accepted(key, { transcript: TRANSCRIPT });
        const second = await accepted(key, { transcript: TRANSCRIPT, duration: 1800 });
        const reserved = first.capacity.reservedMinutes + second.capacity.reservedMinutes;
        for (let i = 0; i < 3; i++) {
          const now = await usage();
          assert.equal(now.reservedMinutes, reserved);
          assert.equal(now.remainingMinutes, 600 - reserved);
          assert.equal(now.usedMinutes, 0);
          assert.equal(now.rateLimit.remaining, 28, 'two submissions counted, the usage reads none');
          assert.ok(now.rateLimit.resetSeconds >= 1 && now.rateLimit.resetSeconds <= 60);
        }
        const anonymous = await h.ingress.app.inject({ method: 'GET', url: '/api/usage' });
        assert.equal(anonymous.statusCode, 401);
      });

      test('duration is read in the unit its platform sends (durationUnit, else metadata.source, else its size), and reserved as such', async () => {
        const { key } = await h.team();
        const cases: Array<[Json, number, string, string]> = [
          // [body fields, seconds, unit, basis]
          [{ duration: 45, metadata: { source: 'zoom' } }, 2700, 'minutes', 'source'],
          [{ duration: 45, metadata: { source: 'aircall' } }, 45, 'seconds', 'source'],
          [{ duration: 90000, metadata: { source: 'hubspot' } }, 90, 'milliseconds', 'source'],
          [{ duration: 45, durationUnit: 'minutes', metadata: { source: 'aircall' } }, 2700, 'minutes', 'explicit'],
          [{ duration: 1800 }, 1800, 'seconds', 'magnitude'],
          [{ duration: 90000 }, 90, 'milliseconds', 'magnitude'],
          [{ duration: 12.5 }, 750, 'minutes', 'magnitude'],
        ];
        for (const [fields, seconds, unit, basis] of cases) {
          // Audio alone: with a transcript, its length would correct the reservation (capacity.ts).
          const call = await accepted(key, {
            audioUrl: 'https://recordings.example.com/call.mp3',
            ...(fields as Record<string, Json>),
          });
          const duration = (call.submission as { duration?: { seconds: number; unit: string; basis: string } })
            .duration;
          assert.deepEqual(
            [duration?.seconds, duration?.unit, duration?.basis],
            [seconds, unit, basis],
            JSON.stringify(fields),
          );
          // The reservation is the duration as read, in started minutes.
          assert.equal(call.capacity.reservedMinutes, Math.ceil(seconds / 60), JSON.stringify(fields));
        }
      });

      test('415 when Content-Type is not JSON', async () => {
        const { key } = await h.team();
        const res = await h.ingest({ key, headers: { 'content-type': 'text/plain' }, payload: 'transcript=hello' });
        assert.equal(res.statusCode, 415);
        assert.equal(problemOf(res.body).code, 'UNSUPPORTED_MEDIA_TYPE');
        assert.match(problemOf(res.body).detail, /"text\/plain".*application\/json/, 'the detail names both types');
        assert.deepEqual(problemOf(res.body).errors, [{ field: 'Content-Type', message: 'must be application/json' }]);
      });

      test('400 for a body that is not JSON', async () => {
        const { key } = await h.team();
        const res = await h.ingest({ key, payload: '{"transcript": ' });
        assert.equal(res.statusCode, 400);
        assert.equal(problemOf(res.body).code, 'MALFORMED_JSON');
        assert.deepEqual(
          problemOf(res.body).errors?.map((e) => e.field),
          ['body'],
        );
        assert.match(problemOf(res.body).errors![0]!.message, /not valid JSON/);
        const empty = await h.ingest({ key, payload: '' });
        assert.equal(empty.statusCode, 400);
        assert.deepEqual(problemOf(empty.body).errors, [{ field: 'body', message: 'is empty; send a JSON object' }]);
      });

      test('a route that takes no body is not refused for an empty body sent as application/json', async () => {
        const { key } = await h.team();
        const res = await h.ingress.app.inject({
          method: 'DELETE',
          url: `/api/calls/${randomUUID()}`,
          headers: { 'x-api-key': key, 'content-type': 'application/json' },
          payload: '',
        });
        assert.equal(res.statusCode, 404, res.body);
        assert.equal(problemOf(res.body).code, 'NOT_FOUND');
      });

      test('503 with Retry-After when the log cannot take the call, and the reservation is released', async () => {
        const broken = await createHarness({
          eventStore: backends.eventStore,
          eventLog: await backends.brokenEventLog(),
        });
        try {
          const { teamId, key } = await broken.team({ capacityHours: 1 });
          const res = await broken.ingest({
            key,
            body: { transcript: TRANSCRIPT, duration: 10, durationUnit: 'minutes' },
          });
          assert.equal(res.statusCode, 503, res.body);
          assert.ok(Number(res.headers['retry-after']) > 0);
          assert.equal(problemOf(res.body).code, 'SERVICE_UNAVAILABLE');
          const team = (await broken.admin('GET', `/api/admin/teams/${teamId}`)).json<{
            capacity: { remainingMinutes: number; reservedCalls: number };
          }>();
          assert.deepEqual([team.capacity.remainingMinutes, team.capacity.reservedCalls], [60, 0]);
        } finally {
          await broken.close();
        }
      });
    });

    describe('order of checks: 401 → 429 → 413 → 400 → 402 → 201', () => {
      test('an invalid key with a huge, invalid body gets 401', async () => {
        const res = await h.ingest({
          key: 'pk_wrong',
          payload: JSON.stringify({ x: 'a'.repeat(11 * MB) }),
          remoteAddress: freshAddress(),
        });
        assert.equal(res.statusCode, 401);
      });

      test('a rate-limited key with an oversized body gets 429', async () => {
        const { key } = await h.team();
        for (let i = 0; i < 30; i++) await h.ingest({ key, body: {} });
        const res = await h.ingest({ key, payload: JSON.stringify({ transcript: 'a'.repeat(11 * MB) }) });
        assert.equal(res.statusCode, 429, 'every request with a valid key counts, 400s included');
      });

      test('an oversized body with invalid fields gets 413', async () => {
        const { key } = await h.team();
        const res = await h.ingest({ key, payload: JSON.stringify({ tags: 'x', notes: 'a'.repeat(11 * MB) }) });
        assert.equal(res.statusCode, 413);
      });

      test('an invalid body from a team without capacity gets 400, not 402', async () => {
        const { key } = await h.team({ capacityHours: 0 });
        assert.equal((await h.ingest({ key, body: { tags: ['x'] } })).statusCode, 400);
      });

      test('more than 100 failed authentications from one address in a minute are still 401, then with Retry-After', async () => {
        const remoteAddress = freshAddress();
        for (let i = 0; i < 100; i++) {
          const refused = await h.ingest({ key: `pk_bad${i}`, body: {}, remoteAddress });
          assert.equal(refused.statusCode, 401);
          assert.equal(refused.headers['retry-after'], undefined);
        }
        for (const key of ['pk_bad', undefined]) {
          const throttled = await h.ingest({ key, body: {}, remoteAddress });
          assert.equal(throttled.statusCode, 401, 'the spec: a missing or invalid key gives 401');
          assert.equal(problemOf(throttled.body).code, 'API_KEY_INVALID');
          assert.match(problemOf(throttled.body).detail, /This address has failed to authenticate more than 100 times/);
          assert.ok(Number(throttled.headers['retry-after']) >= 1);
        }
        const { key } = await h.team();
        assert.equal(
          (await h.ingest({ key, body: { transcript: TRANSCRIPT }, remoteAddress })).statusCode,
          201,
          'a valid key from that address still works',
        );
      });
    });

    describe('title rule inputs', () => {
      const cases: [string, Json, boolean, string | undefined][] = [
        [
          'by default AI titles are on and callTitle is kept but not displayed',
          { callTitle: 'Intro with Dana' },
          true,
          'Intro with Dana',
        ],
        [
          'disableAiTitleGeneration true turns AI titles off',
          { disableAiTitleGeneration: true, callTitle: 'Intro' },
          false,
          'Intro',
        ],
        [
          'disable_ai_title_generation true turns AI titles off',
          { disable_ai_title_generation: true, call_title: 'Intro' },
          false,
          'Intro',
        ],
        ['useAiCallTitle false turns AI titles off', { useAiCallTitle: false, callTitle: 'Intro' }, false, 'Intro'],
        ['use_ai_call_title true keeps AI titles on', { use_ai_call_title: true }, true, undefined],
        ['AI off without callTitle (generic title later)', { disableAiTitleGeneration: true }, false, undefined],
      ];
      for (const [label, fields, aiTitleEnabled, callTitle] of cases) {
        test(label, async () => {
          const { key } = await h.team();
          const call = await accepted(key, { transcript: TRANSCRIPT, ...fields });
          assert.equal(call.submission.aiTitleEnabled, aiTitleEnabled);
          assert.equal(call.submission.callTitle, callTitle);
        });
      }
      test('disableAiTitleGeneration and useAiCallTitle that contradict each other: 400 naming both', async () => {
        const { key } = await h.team();
        const problem = await rejected(key, {
          transcript: TRANSCRIPT,
          disableAiTitleGeneration: true,
          useAiCallTitle: true,
        });
        const text = JSON.stringify(problem.errors);
        assert.match(text, /disableAiTitleGeneration/);
        assert.match(text, /useAiCallTitle/);
      });
    });

    describe('authentication', () => {
      test('1–3: a key is generated per team, begins with pk_, and is shown only once', async () => {
        const { teamId, key, keyId } = await h.team();
        assert.match(key, /^pk_[A-Za-z0-9]{20,}$/);
        const team = await h.admin('GET', `/api/admin/teams/${teamId}`);
        assert.equal(team.statusCode, 200);
        assert.ok(!team.body.includes(key), 'the key is never shown again');
        assert.ok(!team.body.includes(key.slice(3)), 'not even without its prefix');
        assert.ok(team.body.includes(keyId));
      });

      test('4: the key is accepted in X-API-Key and in Authorization: Bearer', async () => {
        const { key } = await h.team();
        assert.equal(
          (await h.ingest({ headers: { 'x-api-key': key }, body: { transcript: TRANSCRIPT } })).statusCode,
          201,
        );
        assert.equal(
          (await h.ingest({ headers: { authorization: `Bearer ${key}` }, body: { transcript: TRANSCRIPT } }))
            .statusCode,
          201,
        );
      });

      test('5: a key in the URL query (apiKey) or in the body does not authenticate', async () => {
        const { key } = await h.team();
        const remoteAddress = freshAddress();
        const inQuery = await h.ingest({
          url: `/api/integrations/push-api/ingest?apiKey=${key}`,
          body: { transcript: TRANSCRIPT },
          remoteAddress,
        });
        assert.equal(inQuery.statusCode, 401);
        const inBody = await h.ingest({ body: { transcript: TRANSCRIPT, apiKey: key, api_key: key }, remoteAddress });
        assert.equal(inBody.statusCode, 401);
        assert.match(problemOf(inBody.body).detail, /header/);
      });

      test('6: the team is inferred from the key, never from the body', async () => {
        const mine = await h.team();
        const other = await h.team();
        const call = await accepted(mine.key, { transcript: TRANSCRIPT, teamId: other.teamId });
        assert.equal(call.teamId, mine.teamId);
        assert.equal(call.keyId, mine.keyId);
      });

      test('7: a revoked key gives 401', async () => {
        const { teamId, key, keyId } = await h.team();
        assert.equal((await h.ingest({ key, body: { transcript: TRANSCRIPT } })).statusCode, 201);
        assert.equal((await h.admin('DELETE', `/api/admin/teams/${teamId}/keys/${keyId}`)).statusCode, 204);
        assert.equal(
          (await h.ingest({ key, body: { transcript: TRANSCRIPT }, remoteAddress: freshAddress() })).statusCode,
          401,
        );
        assert.equal(
          (await h.admin('DELETE', `/api/admin/teams/${teamId}/keys/${keyId}`)).statusCode,
          409,
          'revoking twice is a conflict',
        );
      });

      test('a key never appears in a log line', async () => {
        const { key } = await h.team();
        await h.ingest({ key, body: { transcript: TRANSCRIPT } });
        await h.ingest({ headers: { authorization: `Bearer ${key}` }, body: { transcript: TRANSCRIPT } });
        await h.ingest({
          url: `/api/integrations/push-api/ingest?apiKey=${key}&x=1`,
          body: {},
          remoteAddress: freshAddress(),
        });
        await h.ingest({
          url: `/api/integrations/push-api/ingest?foo=${key}`,
          body: {},
          remoteAddress: freshAddress(),
        });
        await h.ingest({ body: { transcript: TRANSCRIPT, apiKey: key }, remoteAddress: freshAddress() });
        assert.ok(h.logLines.length > 5, 'requests were logged');
        const leaking = h.logLines.filter((line) => line.includes(key) || line.includes(key.slice(3)));
        assert.deepEqual(leaking, []);
      });
    });

    describe('limits', () => {
      test('inline transcript over 500 KB is truncated on a UTF-8 boundary and the 201 says so', async () => {
        const { key } = await h.team();
        const transcript = 'é'.repeat(300_000); // 600,000 bytes of 2-byte characters
        const res = await h.ingest({ key, body: { transcript } });
        assert.equal(res.statusCode, 201);
        const warnings = res.json<{ warnings: string[] }>().warnings;
        assert.ok(
          warnings.some((w) => /truncated/i.test(w)),
          JSON.stringify(warnings),
        );
        const call = fromRecord<CallSubmittedData>(await h.submitted(res.json<{ callId: string }>().callId)).data;
        assert.equal(call.submission.transcript!.truncated, true);
        assert.equal(Buffer.byteLength(call.submission.transcript!.text), 512_000);
        assert.equal(call.submission.transcript!.text, 'é'.repeat(256_000));
      });

      const edges: [string, Json, Json][] = [
        [
          'tags: 20 accepted, 21 rejected',
          { tags: Array.from({ length: 20 }, (_, i) => `t${i}`) },
          { tags: Array.from({ length: 21 }, (_, i) => `t${i}`) },
        ],
        ['tags: 50 characters accepted, 51 rejected', { tags: ['x'.repeat(50)] }, { tags: ['x'.repeat(51)] }],
        ['notes: 2000 characters accepted, 2001 rejected', { notes: 'n'.repeat(2000) }, { notes: 'n'.repeat(2001) }],
        [
          'metadata: 20 flat keys accepted, 21 rejected',
          { metadata: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, i])) },
          { metadata: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, i])) },
        ],
        [
          'metadata: flat accepted, nested rejected',
          { metadata: { source: 'aircall', direction: 'inbound' } },
          { metadata: { source: { name: 'aircall' } } },
        ],
      ];
      for (const [label, ok, tooMuch] of edges) {
        test(label, async () => {
          const { key } = await h.team();
          assert.equal((await h.ingest({ key, body: { transcript: TRANSCRIPT, ...ok } })).statusCode, 201);
          const problem = await rejected(key, { transcript: TRANSCRIPT, ...tooMuch });
          const field = Object.keys(tooMuch)[0]!;
          assert.ok(
            problem.errors!.some((e) => e.field.startsWith(field)),
            JSON.stringify(problem.errors),
          );
        });
      }

      test('live call capacity: concurrent submissions never overdraw by more than one call', async () => {
        const { teamId, key } = await h.team({ capacityHours: 0.5 });
        const responses = await Promise.all(
          Array.from({ length: 20 }, () =>
            h.ingest({ key, body: { transcript: TRANSCRIPT, duration: 10, durationUnit: 'minutes' } }),
          ),
        );
        const codes = responses.map((r) => r.statusCode);
        assert.equal(codes.filter((c) => c === 201).length, 3, `30 minutes admit three 10-minute calls: ${codes}`);
        assert.equal(codes.filter((c) => c === 402).length, 17);
        const team = (await h.admin('GET', `/api/admin/teams/${teamId}`)).json<{
          capacity: { remainingMinutes: number };
        }>();
        assert.ok(
          team.capacity.remainingMinutes >= -10,
          `overdrawn by at most one call: ${team.capacity.remainingMinutes}`,
        );
      });
    });

    describe('aliases', () => {
      const aliasCases: [string, Json, (c: CallSubmittedData) => unknown, unknown][] = [
        [
          'audioUrl',
          { audioUrl: 'https://calls.example/a.mp3' },
          (c) => c.submission.audioUrl,
          'https://calls.example/a.mp3',
        ],
        [
          'audio_url',
          { audio_url: 'https://calls.example/a.mp3' },
          (c) => c.submission.audioUrl,
          'https://calls.example/a.mp3',
        ],
        ['repName', { repName: 'Dana Reyes' }, (c) => c.submission.repName, 'Dana Reyes'],
        ['rep_name', { rep_name: 'Dana Reyes' }, (c) => c.submission.repName, 'Dana Reyes'],
        ['repEmail', { repEmail: 'dana@acme.test' }, (c) => c.submission.repEmail, 'dana@acme.test'],
        ['rep_email', { rep_email: 'dana@acme.test' }, (c) => c.submission.repEmail, 'dana@acme.test'],
        ['callTitle', { callTitle: 'Intro' }, (c) => c.submission.callTitle, 'Intro'],
        ['call_title', { call_title: 'Intro' }, (c) => c.submission.callTitle, 'Intro'],
        ['callDate', { callDate: '2026-11-20T15:00:00Z' }, (c) => c.submission.callDate, '2026-11-20T15:00:00.000Z'],
        ['call_date', { call_date: '2026-11-20' }, (c) => c.submission.callDate, '2026-11-20T00:00:00.000Z'],
        ['tags', { tags: ['a', 'b'] }, (c) => c.submission.tags, ['a', 'b']],
        ['callTags', { callTags: ['a'] }, (c) => c.submission.tags, ['a']],
        ['call_tags', { call_tags: ['a'] }, (c) => c.submission.tags, ['a']],
        ['notes', { notes: 'n' }, (c) => c.submission.notes, 'n'],
        ['callNotes', { callNotes: 'n' }, (c) => c.submission.notes, 'n'],
        ['call_notes', { call_notes: 'n' }, (c) => c.submission.notes, 'n'],
        ['dealSize', { dealSize: 10 }, (c) => c.submission.deal?.dealSize, 10],
        ['deal_size', { deal_size: 10 }, (c) => c.submission.deal?.dealSize, 10],
        ['revenueCollected', { revenueCollected: 5 }, (c) => c.submission.deal?.revenueCollected, 5],
        ['revenue_collected', { revenue_collected: 5 }, (c) => c.submission.deal?.revenueCollected, 5],
        ['dealDate', { dealDate: '2026-11-01' }, (c) => c.submission.deal?.dealDate, '2026-11-01T00:00:00.000Z'],
        ['deal_date', { deal_date: '2026-11-01' }, (c) => c.submission.deal?.dealDate, '2026-11-01T00:00:00.000Z'],
        ['dealNotes', { dealNotes: 'won' }, (c) => c.submission.deal?.notes, 'won'],
        ['deal_notes', { deal_notes: 'won' }, (c) => c.submission.deal?.notes, 'won'],
        ['deal.deal_size', { deal: { deal_size: 7 } }, (c) => c.submission.deal?.dealSize, 7],
        ['deal.revenue_collected', { deal: { revenue_collected: 7 } }, (c) => c.submission.deal?.revenueCollected, 7],
        [
          'deal.deal_date',
          { deal: { deal_date: '2026-01-02' } },
          (c) => c.submission.deal?.dealDate,
          '2026-01-02T00:00:00.000Z',
        ],
      ];
      test('every alias maps to its field (one team, one call per alias)', async () => {
        const { key } = await h.team();
        for (const [alias, fields, read, expected] of aliasCases) {
          const call = await accepted(key, { transcript: TRANSCRIPT, ...fields }).catch((e: unknown) => {
            throw new Error(`${alias}: ${(e as Error).message}`);
          });
          assert.deepEqual(read(call), expected, alias);
        }
      });

      test('the same field under two names with different values: 400 naming both', async () => {
        const { key } = await h.team();
        for (const [a, b] of [
          [{ repName: 'A' }, { rep_name: 'B' }],
          [{ tags: ['a'] }, { call_tags: ['b'] }],
          [{ deal: { dealSize: 1 } }, { dealSize: 2 }],
        ] as [Json, Json][]) {
          const problem = await rejected(key, { transcript: TRANSCRIPT, ...a, ...b });
          const text = JSON.stringify(problem.errors);
          for (const name of [...Object.keys(a), ...Object.keys(b)].filter((n) => n !== 'deal'))
            assert.match(text, new RegExp(name), text);
        }
        assert.equal(
          (await h.ingest({ key, body: { transcript: TRANSCRIPT, repName: 'Same', rep_name: 'Same' } })).statusCode,
          201,
          'equal values are fine',
        );
      });
    });

    describe('teams: attribution of tags and notes', () => {
      test('repEmail matches a member case-insensitively; no match attaches to the team owner', async () => {
        const { teamId, key } = await h.team({ ownerEmail: 'olive@acme.test', ownerName: 'Olive Owner' });
        const added = await h.admin('POST', `/api/admin/teams/${teamId}/members`, {
          email: 'Dana.Reyes@Acme.test',
          name: 'Dana Reyes',
        });
        assert.equal(added.statusCode, 201);
        const member = await accepted(key, {
          transcript: TRANSCRIPT,
          repEmail: 'dana.reyes@ACME.TEST',
          tags: ['demo'],
          notes: 'n',
        });
        assert.deepEqual(member.attributedTo, {
          kind: 'member',
          memberId: added.json<{ memberId: string }>().memberId,
          email: 'Dana.Reyes@Acme.test',
          name: 'Dana Reyes',
        });
        const owner = await accepted(key, { transcript: TRANSCRIPT, repEmail: 'someone@else.test', tags: ['demo'] });
        assert.deepEqual(owner.attributedTo, { kind: 'owner', email: 'olive@acme.test', name: 'Olive Owner' });
      });
    });

    describe('admin API and documentation', () => {
      test('admin routes need the admin token', async () => {
        const res = await h.ingress.app.inject({
          method: 'POST',
          url: '/api/admin/teams',
          payload: { name: 'x', ownerEmail: 'a@b.c' },
        });
        assert.equal(res.statusCode, 401);
        assert.equal(problemOf(res.body).code, 'ADMIN_TOKEN_INVALID');
      });

      test('admin input errors are field-level 400s; unknown team is 404', async () => {
        const bad = await h.admin('POST', '/api/admin/teams', { name: '', ownerEmail: 'nope' });
        assert.equal(bad.statusCode, 400);
        assert.ok(problemOf(bad.body).errors!.length >= 1);
        assert.equal((await h.admin('GET', `/api/admin/teams/${randomUUID()}`)).statusCode, 404);
        assert.equal((await h.admin('POST', `/api/admin/teams/${randomUUID()}/keys`, {})).statusCode, 404);
      });

      test('the OpenAPI document at /docs/json describes the ingest endpoint with every alias', async () => {
        const res = await h.ingress.app.inject({ method: 'GET', url: '/docs/json' });
        assert.equal(res.statusCode, 200);
        const doc = res.json<{
          paths: Record<
            string,
            Record<
              string,
              { requestBody: { content: Record<string, { schema: { properties: Json } }> }; responses: Json }
            >
          >;
        }>();
        const post = doc.paths['/api/integrations/push-api/ingest']!.post!;
        const props = Object.keys(post.requestBody.content['application/json']!.schema.properties);
        for (const alias of ['audio_url', 'rep_name', 'callTags', 'call_notes', 'deal_size', 'use_ai_call_title'])
          assert.ok(props.includes(alias), alias);
        for (const status of ['201', '400', '401', '402', '409', '413', '415', '422', '429', '503'])
          assert.ok(status in post.responses, status);
      });

      test('every error code has a status and appears in the README', async () => {
        const { readFile } = await import('node:fs/promises');
        const readme = await readFile(new URL('../../README.md', import.meta.url), 'utf8');
        for (const code of Object.keys(ERROR_STATUS))
          assert.ok(readme.includes(`\`${code}\``), `README documents ${code}`);
      });
    });
  });
};
