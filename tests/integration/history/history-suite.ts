/**
 * The read side end to end: calls submitted through the real HTTP endpoint, processed, projected,
 * and found through the read API; deal.outcome.updated consumed from the event log; replay.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { FormatRegistry } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { fromRecord } from '../../../shared/cloudevents.ts';
import { DealOutcomeUpdatedSchema } from '../../../shared/domain/call/event-schemas.ts';
import type { DealRecord } from '../../../shared/domain/call/deal-record.ts';
import type { EventLog, LogRecord } from '../../../shared/ports/event-log.ts';
import type { EventStore } from '../../../shared/ports/event-store.ts';
import type { ReadModels } from '../../../shared/ports/read-models.ts';
import { replayProjection } from '../../../services/projections/replay.ts';
import { eventually } from '../../support/eventually.ts';
import { ADMIN_TOKEN } from '../../support/ingress-harness.ts';
import { createPipelineHarness, type PipelineHarness } from '../../support/pipeline-harness.ts';

export interface HistoryBackends {
  eventStore: EventStore;
  eventLog: EventLog;
  readModels: ReadModels;
  cleanup(): Promise<void>;
}

interface CallItem {
  callId: string;
  title: string;
  repName: string | null;
  status: string;
  statusReason: string;
  processingError: string | null;
  tags: string[];
  attributedTo: { kind: string; email: string; name: string };
  [field: string]: unknown;
}

const transcriptWith = (prospect: string) =>
  [
    `Rep: Hi ${prospect}, thanks for joining. How do you review calls today?`,
    `${prospect}: Spreadsheets, mostly. The pricing of most tools worries me.`,
    'Rep: I understand. We can start with a pilot so the cost is clear. What would success look like?',
    `${prospect}: Fewer hours in review meetings.`,
    'Rep: Great, I will send you a proposal and book a demo for Friday.',
  ].join('\n');

export const historySuite = (
  name: string,
  factory: () => Promise<HistoryBackends>,
  options: { skip?: string } = {},
) => {
  describe(`call history and deals: ${name}`, { skip: options.skip }, () => {
    let backends: HistoryBackends;
    let h: PipelineHarness;
    let team: { teamId: string; key: string };
    let other: { teamId: string; key: string };
    const calls: Record<string, string> = {};

    const get = async (url: string, key = team.key) => {
      const res = await h.ingress.app.inject({ method: 'GET', url, headers: { 'x-api-key': key } });
      return res;
    };
    const search = async (query: string) => {
      const res = await get(`/api/calls?search=${encodeURIComponent(query)}&limit=100`);
      assert.equal(res.statusCode, 200, res.body);
      return res
        .json<{ calls: CallItem[] }>()
        .calls.map((c) => c.callId)
        .sort();
    };
    const ids = (...names: string[]) => names.map((n) => calls[n]!).sort();

    before(async () => {
      backends = await factory();
      h = await createPipelineHarness(backends);
      team = await h.team({ ownerEmail: 'olive@acme.test', ownerName: 'Olive Owner' });
      other = await h.team();
      await h.admin('POST', `/api/admin/teams/${team.teamId}/members`, { email: 'sam@acme.test', name: 'Sam Seller' });
      const submit = async (label: string, body: Record<string, unknown>, key = team.key) => {
        const res = await h.ingest({ key, body });
        assert.equal(res.statusCode, 201, res.body);
        calls[label] = res.json<{ callId: string }>().callId;
      };
      // Title rule 1: AI title from the transcript (the supplied callTitle is not displayed).
      await submit('ai', {
        transcript: transcriptWith('Dana'),
        repName: 'Sam Seller',
        repEmail: 'SAM@acme.test',
        callTitle: 'Zebra supplied title',
        tags: ['demo', 'q4'],
      });
      // Title rule 2: AI disabled and a callTitle → the supplied title; the prospect's name goes in it.
      await submit('supplied', {
        transcript: transcriptWith('Priya'),
        repName: 'Alex Müller',
        disableAiTitleGeneration: true,
        callTitle: 'Renewal with Priya Patel',
        tags: ['renewal'],
      });
      // Title rule 3: AI disabled, no callTitle → generic title.
      await submit('generic', {
        transcript: transcriptWith('Kim'),
        repName: 'Jo Lee',
        useAiCallTitle: false,
        callDate: '2026-11-20',
        tags: ['demo'],
        notes: 'Mentioned Zebra Corp in notes',
      });
      await submit('deal', {
        transcript: transcriptWith('Dana'),
        repName: 'Sam Seller',
        dealSize: '1200.50',
        revenueCollected: 300,
        dealDate: '2026-11-20',
        dealNotes: 'Signed',
      });
      await submit('other-team', { transcript: transcriptWith('Dana'), repName: 'Sam Seller' }, other.key);
      await eventually(
        async () => {
          for (const callId of Object.values(calls)) {
            const key = callId === calls['other-team'] ? other.key : team.key;
            const res = await get(`/api/calls/${callId}`, key);
            assert.equal(res.statusCode, 200, res.body);
            assert.equal(res.json<CallItem>().status, 'completed');
          }
        },
        { timeoutMs: 30_000, intervalMs: 50 },
      );
    });
    after(async () => {
      await h?.close();
      await backends?.cleanup();
    });

    test('each submitted call is found through the read API with its displayed title and status', async () => {
      const res = await get('/api/calls?limit=100');
      assert.equal(res.statusCode, 200);
      const list = res.json<{ calls: CallItem[]; nextCursor: string | null }>();
      assert.deepEqual(list.calls.map((c) => c.callId).sort(), ids('ai', 'supplied', 'generic', 'deal'));
      const byId = Object.fromEntries(list.calls.map((c) => [c.callId, c]));
      assert.notEqual(
        byId[calls.ai!]!.title,
        'Zebra supplied title',
        'title rule 1: the supplied title is not displayed by default',
      );
      assert.match(byId[calls.ai!]!.title, /Dana/);
      assert.equal(byId[calls.supplied!]!.title, 'Renewal with Priya Patel', 'title rule 2');
      assert.equal(byId[calls.generic!]!.title, 'Call with Jo Lee on 2026-11-20', 'title rule 3');
      for (const c of list.calls)
        assert.deepEqual([c.status, c.statusReason, c.processingError], ['completed', 'completed', null]);
      const created = list.calls.map((c) => c.createdAt as string);
      assert.deepEqual(created, [...created].sort().reverse(), 'newest first');
    });

    test('the detail carries transcript, analysis, deal and attribution', async () => {
      const detail = (await get(`/api/calls/${calls.deal}`)).json<Record<string, unknown>>();
      assert.deepEqual(detail.deal, {
        dealSize: 1200.5,
        revenueCollected: 300,
        dealDate: '2026-11-20T00:00:00.000Z',
        notes: 'Signed',
      });
      assert.equal((detail.transcript as { source: string }).source, 'inline');
      const analysis = detail.analysis as { score: number; insights: unknown[]; summary: string };
      assert.ok(
        analysis.score >= 0 && analysis.score <= 100 && analysis.insights.length > 0 && analysis.summary.length > 0,
      );
      const ai = (await get(`/api/calls/${calls.ai}`)).json<CallItem>();
      assert.deepEqual(ai.attributedTo, { kind: 'member', email: 'sam@acme.test', name: 'Sam Seller' });
      assert.deepEqual(ai.tags, ['demo', 'q4']);
    });

    test("another team's call is a 404", async () => {
      assert.equal((await get(`/api/calls/${calls['other-team']}`)).statusCode, 404);
      assert.equal((await get(`/api/calls/${calls.ai}`, other.key)).statusCode, 404);
    });

    test('search rule 1: search matches only the displayed call title and the rep name', async () => {
      assert.deepEqual(await search('Renewal with'), ids('supplied'));
      assert.deepEqual(await search('Jo Lee'), ids('generic'));
    });

    test('search rule 2: exact, case-insensitive substring; a longer name does not match a shorter title', async () => {
      assert.deepEqual(await search('ALEX müller'), ids('supplied'), 'case-insensitive, Unicode');
      assert.deepEqual(await search('lex mül'), ids('supplied'), 'substring');
      assert.deepEqual(
        await search('Renewal with Priya Patel Jr'),
        [],
        'a longer text does not match the shorter title',
      );
      assert.deepEqual(await search('Renewl'), [], 'not fuzzy');
    });

    test('search rule 3: the transcript, prospect, tags and notes are not searched', async () => {
      assert.deepEqual(await search('spreadsheets'), [], 'transcript');
      assert.deepEqual(await search('Zebra'), [], 'the undisplayed callTitle and the notes');
      assert.deepEqual(await search('q4'), [], 'tags');
      assert.deepEqual(await search('Kim'), [], 'a prospect only named in the transcript');
    });

    test('search rule 4: a prospect named in the call title is found by that name', async () => {
      assert.deepEqual(await search('priya patel'), ids('supplied'));
    });

    test('search rule 5: tags filter the history (repeatable, all must match); the search box does not match tags', async () => {
      const tagged = async (query: string) =>
        (await get(`/api/calls?${query}`))
          .json<{ calls: CallItem[] }>()
          .calls.map((c) => c.callId)
          .sort();
      assert.deepEqual(await tagged('tag=demo'), ids('ai', 'generic'));
      assert.deepEqual(await tagged('tag=demo&tag=q4'), ids('ai'));
      assert.deepEqual(await search('demo'), []);
    });

    test('status filter and cursor pagination', async () => {
      assert.deepEqual((await get('/api/calls?status=failed')).json<{ calls: unknown[] }>().calls, []);
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: { calls: CallItem[]; nextCursor: string | null } = (
          await get(`/api/calls?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
        ).json();
        seen.push(...page.calls.map((c) => c.callId));
        cursor = page.nextCursor;
      } while (cursor);
      assert.deepEqual([...seen].sort(), ids('ai', 'supplied', 'generic', 'deal'));
      assert.equal(new Set(seen).size, seen.length, 'no call twice');
      assert.equal((await get('/api/calls?limit=0')).statusCode, 400);
      assert.equal((await get('/api/calls?status=done')).statusCode, 400);
    });

    test('from / to, repEmail, and updatedSince with order=updated_asc (a sync that pages by cursor sees every call once); bad values are 400s naming the field', async () => {
      const list = async (query: string) => {
        const res = await get(`/api/calls?${query}`);
        assert.equal(res.statusCode, 200, res.body);
        return res.json<{ calls: CallItem[]; nextCursor: string | null }>();
      };
      // 'generic' is dated 2026-11-20; the others carry their submission time (today).
      const dated = await list('from=2026-11-20&to=2026-11-20&limit=100');
      assert.deepEqual(
        dated.calls.map((c) => c.callId),
        [calls.generic],
      );
      assert.deepEqual(
        (await list(`from=2026-11-21&limit=100`)).calls.map((c) => c.callId).sort(),
        ids('ai', 'supplied', 'deal'),
      );
      assert.deepEqual(
        (await list('repEmail=sam%40ACME.test')).calls.map((c) => c.callId),
        [calls.ai],
      );
      assert.deepEqual((await list('repEmail=sam%40acme.tes')).calls, []);

      // Sync: every call by last change, one per page; updatedAt never goes down.
      const synced: CallItem[] = [];
      let cursor: string | null = null;
      do {
        const page = await list(
          `order=updated_asc&updatedSince=2000-01-01T00:00:00Z&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        );
        synced.push(...page.calls);
        cursor = page.nextCursor;
      } while (cursor);
      assert.deepEqual(synced.map((c) => c.callId).sort(), ids('ai', 'supplied', 'generic', 'deal'));
      const detail = await Promise.all(
        synced.map(async (c) => (await get(`/api/calls/${c.callId}`)).json<{ updatedAt: string }>().updatedAt),
      );
      assert.deepEqual(detail, [...detail].sort(), 'least recently changed first');
      const latest = detail.at(-1)!;
      const since = await list(`order=updated_asc&updatedSince=${encodeURIComponent(latest)}&limit=100`);
      assert.deepEqual(
        since.calls.map((c) => c.callId),
        // Calls processed within one millisecond share their updatedAt: every one of them is in.
        synced.filter((_, i) => detail[i] === latest).map((c) => c.callId),
        'updatedSince is inclusive',
      );

      for (const [query, field] of [
        ['from=2026-02-30', 'from'],
        ['to=tomorrow', 'to'],
        ['from=2026-03-02&to=2026-03-01', 'to'],
        ['updatedSince=2026-11-20T25:00:00Z', 'updatedSince'],
        ['order=newest', 'order'],
        ['repEmail=a%00b', 'repEmail'],
        [
          `order=updated_asc&cursor=${encodeURIComponent(dated.nextCursor ?? Buffer.from('[1,"x"]').toString('base64url'))}`,
          'cursor',
        ],
      ] as const) {
        const res = await get(`/api/calls?${query}`);
        assert.equal(res.statusCode, 400, `${query}: ${res.body}`);
        const problem = res.json<{ errors?: { field: string; message: string }[] }>();
        assert.ok(
          problem.errors?.some((e) => e.field.includes(field)),
          `${query}: ${res.body}`,
        );
      }
    });

    test('the read API has its own rate limit, separate from ingest', async () => {
      const res = await get('/api/calls?limit=1');
      assert.equal(res.headers['ratelimit-limit'], '600');
    });

    test('deal.outcome.updated: exactly one message per deal write, after the deal record exists, with a stable id', async () => {
      const received: LogRecord[] = [];
      const consumer = await h.eventLog.consume({
        groupId: `deal-consumer-${randomUUID()}`,
        topics: [h.topics.dealOutcomeUpdated],
        handler: async (record) => {
          // The deal record is already written when its message arrives.
          assert.ok(await backends.readModels.deals.get(record.key), `deal record of ${record.key} exists`);
          received.push(record);
        },
      });
      try {
        await eventually(() => assert.equal(received.length, 1), { timeoutMs: 20_000 });
        // Re-applying every event to the deal projection must not publish again.
        const events = await backends.eventStore.readAll({ maxCount: 100_000 });
        await backends.readModels.deals.apply(events, await backends.readModels.deals.checkpoint());
        await h.projections!.caughtUp(); // the outbox is drained: every publish has happened
        const onTopic = (await h.eventLog.read(h.topics.dealOutcomeUpdated, { limit: 1000 })).filter(
          (r) => r.key === calls.deal,
        );
        assert.equal(onTopic.length, 1, 'one message on the topic');
        assert.equal(received.length, 1);
      } finally {
        await consumer.stop();
      }
      const message = fromRecord<DealRecord>(received[0]!);
      assert.equal(message.type, 'deal.outcome.updated');
      assert.equal(message.subject, calls.deal);
      assert.equal(message.id, message.data.eventId);
      assert.deepEqual(
        [message.data.dealSize, message.data.revenueCollected, message.data.teamId],
        [1200.5, 300, team.teamId],
      );
      // These backends have no data keys, so the message carries its personal fields open: the opened
      // payload's schema. The service seals them; tests/contract/event-schemas.test.ts checks what it
      // publishes against the served /docs/events/deal.outcome.updated.json.
      FormatRegistry.Set('uuid', (v) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(v));
      FormatRegistry.Set('date-time', (v) => !Number.isNaN(Date.parse(v)) && /T/.test(v));
      assert.deepEqual(
        [...Value.Errors(DealOutcomeUpdatedSchema, message.data)].map((e) => `${e.path} ${e.message}`),
        [],
        'the payload matches its documented JSON Schema (personal fields open)',
      );
      const served = await h.ingress.app.inject({ method: 'GET', url: '/docs/events/deal.outcome.updated.json' });
      assert.equal(served.statusCode, 200);
      assert.equal(served.json<{ title: string }>().title, 'deal.outcome.updated');
    });

    test('calls.events.v1 carries every call event in stream order, each with its event id', async () => {
      const stream = await backends.eventStore.readStream(`call-${calls.ai}`);
      const relayed = await eventually(async () => {
        const records = (await h.eventLog.read(h.topics.callEvents, { limit: 10_000 })).filter(
          (r) => r.key === calls.ai,
        );
        assert.equal(records.length, stream.length);
        return records;
      });
      assert.deepEqual(
        relayed.map((r) => r.headers.ce_id),
        stream.map((e) => e.id),
      );
      assert.deepEqual(
        relayed.map((r) => r.headers.ce_type),
        ['call.submitted', 'call.processing.started', 'call.transcript.recorded', 'call.analysed', 'call.completed'],
      );
      assert.equal(relayed[0]!.headers.ce_teamid, team.teamId);
    });

    test('replay rebuilds call history while the service runs; replaying again changes nothing', async () => {
      const before = (await get('/api/calls?limit=100')).json<{ calls: CallItem[] }>().calls;
      const res = await h.ingress.app.inject({
        method: 'POST',
        url: '/api/admin/projections/call-history/replay',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      assert.equal(res.statusCode, 200);
      const lines = res.body
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { phase: string; events: number });
      assert.equal(lines.at(-1)!.phase, 'done');
      assert.ok(lines.at(-1)!.events > 0);
      await h.projections!.caughtUp();
      const afterFirst = (await get('/api/calls?limit=100')).json<{ calls: CallItem[] }>().calls;
      assert.deepEqual(afterFirst, before);
      for await (const _ of replayProjection('call-history', backends)) void _;
      assert.deepEqual((await get('/api/calls?limit=100')).json<{ calls: CallItem[] }>().calls, before);
    });
  });
};
