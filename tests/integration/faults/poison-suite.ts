/**
 * One bad record never stops another, on every backend:
 * - a CallSubmitted record the event store refuses for good (PostgreSQL: U+0000 in a string) goes
 *   to the dead-letter topic with the reason; the member keeps its partitions and the next call
 *   completes;
 * - a failure that is an outage (the store unavailable) is retried in place, never dead-lettered;
 * - an event the projections cannot take stops them, /readyz says which event, and after an
 *   operator skips it (admin API) they resume: later calls appear in the history again;
 * - a bug that fails one call's step (a TypeError) fails that call alone (`internal_error`): the
 *   calls after it on its partition complete;
 * - a bug that fails one record's intake again and again (a TypeError storing its CallSubmitted)
 *   while other records are handled does not hold its partition: the record is set aside in the
 *   dead-letter topic, saying why, the partition's calls after it complete and its offset is
 *   committed past it, and a redrive once the bug is gone completes the call;
 * - a bug that fails call history on one event again and again (a TypeError projecting it) is
 *   reported stuck on that event, in /readyz and GET /api/admin/projections, with the error, and an
 *   operator may skip that event (and only that one): the history goes on past it.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { createConversationAnalyser } from '../../../shared/adapters/analysis/conversation-analyser.ts';
import { partitionForKey } from '../../../shared/adapters/event-log/partitioner.ts';
import type { Analyser } from '../../../shared/ports/analyser.ts';
import type { EventLog } from '../../../shared/ports/event-log.ts';
import { EventStoreUnavailableError, type EventStore } from '../../../shared/ports/event-store.ts';
import type { ReadModels } from '../../../shared/ports/read-models.ts';
import { PROJECTION_STATUS_STREAM } from '../../../services/projections/projection-status.ts';
import { SKIPPED_EVENTS_STREAM } from '../../../services/projections/skipped-events.ts';
import { eventually } from '../../support/eventually.ts';
import { createPipelineHarness, PARTITIONS, type PipelineHarness } from '../../support/pipeline-harness.ts';

export interface PoisonBackends {
  eventStore: EventStore;
  eventLog: EventLog;
  readModels: ReadModels;
  cleanup(): Promise<void>;
}

const TRANSCRIPT =
  'Rep: Hello Dana, thanks for joining.\nDana: Happy to. Pricing is my worry.\nRep: We can start with a pilot.';

/** The built-in analyser, except that a transcript carrying `ANALYSER-BUG` makes it throw a TypeError. */
const buggyAnalyser = (): Analyser => {
  const real = createConversationAnalyser();
  return {
    describe: () => 'buggy on a marker',
    inProcess: real.inProcess,
    async analyse(input, options) {
      if (input.transcript.includes('ANALYSER-BUG'))
        throw new TypeError("Cannot read properties of undefined (reading 'speaker')");
      return real.analyse(input, options);
    },
  };
};

export interface PoisonSuiteOptions {
  skip?: string;
  /**
   * Whether the event store refuses a string with U+0000 (PostgreSQL jsonb does; SQLite stores it).
   * Only such a store can be handed a record it refuses for good; elsewhere the unparseable-record
   * case of the processor suite covers dead-lettering.
   */
  storeRefusesNul?: boolean;
}

export const poisonSuite = (name: string, factory: () => Promise<PoisonBackends>, options: PoisonSuiteOptions = {}) => {
  describe(`one bad record never stops another: ${name}`, { skip: options.skip }, () => {
    let backends: PoisonBackends;
    let h: PipelineHarness;
    let team: { teamId: string; key: string };

    const submit = async (body: Record<string, unknown> = { transcript: TRANSCRIPT }) => {
      const res = await h.ingest({ key: team.key, body });
      assert.equal(res.statusCode, 201, res.body);
      return res.json<{ callId: string }>().callId;
    };
    const completed = async (callId: string) => {
      const events = await h.callEvents(callId, undefined, 30_000);
      assert.equal(events.at(-1)!.type, 'CallCompleted', events.map((e) => e.type).join(', '));
    };
    const listed = (callId: string, timeoutMs = 20_000) =>
      eventually(
        async () => {
          const res = await h.ingress.app.inject({
            method: 'GET',
            url: `/api/calls/${callId}`,
            headers: { 'x-api-key': team.key },
          });
          assert.equal(res.statusCode, 200, `call ${callId} not in the history: ${res.statusCode}`);
          return res.json<{ status: string }>();
        },
        { timeoutMs, intervalMs: 50 },
      );
    const readyz = async () => {
      const res = await h.ingress.app.inject({ method: 'GET', url: '/readyz' });
      return {
        statusCode: res.statusCode,
        body: res.json<{
          status: string;
          reasons?: string[];
          components: Record<string, { ready: boolean; reason?: string; partitions?: number }>;
        }>(),
      };
    };

    before(async () => {
      backends = await factory();
      h = await createPipelineHarness(
        backends,
        { analyser: buggyAnalyser() },
        // A record failing with a bug is set aside after 3 attempts over 300 ms (a minute in service).
        { retryThresholdMs: 60_000, stuckRecordAfter: { attempts: 3, ms: 300, aloneMs: 3_000 } },
      );
      team = await h.team();
    });
    after(async () => {
      await h?.close();
      await backends?.cleanup();
    });

    if (options.storeRefusesNul)
      test('a record the store refuses for good is dead-lettered with the reason; the member keeps its partitions and the next call completes', async () => {
        // A well-formed CallSubmitted record whose data the store cannot hold, written as the ingress would.
        const template = await h.submitted(await submit());
        const callId = randomUUID();
        // CloudEvents binary mode: the value is the event's data, the attributes are ce_* headers.
        const value = JSON.parse(template.value) as Record<string, unknown> & { submission: Record<string, unknown> };
        value.callId = callId;
        value.submission.notes = 'x\u0000y';
        await h.eventLog.publish(h.topics.callsSubmitted, [
          { key: callId, value: JSON.stringify(value), headers: template.headers },
        ]);

        const dead = await eventually(
          async () => {
            const record = (await h.eventLog.read(h.topics.deadLetter, { limit: 1000 })).find((r) => r.key === callId);
            assert.ok(record, 'not dead-lettered yet');
            return record;
          },
          { timeoutMs: 20_000, intervalMs: 50 },
        );
        console.log(`# dead-letter reason: ${dead.headers.dlq_reason}`);
        assert.equal(dead.headers.dlq_source_topic, h.topics.callsSubmitted);
        assert.ok(dead.headers.dlq_reason && dead.headers.dlq_reason.length > 0);
        assert.equal((await h.eventStore.readStream(`call-${callId}`)).length, 0);

        await completed(await submit());
        const ready = await readyz();
        assert.equal(ready.body.components.processor?.ready, true, JSON.stringify(ready.body));
        assert.equal(ready.body.components.processor?.partitions, 3, 'the member still owns every partition');
      });

    test('a call that names no known team still ends, and the next call completes', async () => {
      // A well-formed record, written as the ingress would, for a team no one created.
      const template = await h.submitted(await submit());
      const callId = randomUUID();
      const value = JSON.parse(template.value) as Record<string, unknown>;
      value.callId = callId;
      value.teamId = `team-that-never-was-${randomUUID()}`;
      await h.eventLog.publish(h.topics.callsSubmitted, [
        { key: callId, value: JSON.stringify(value), headers: template.headers },
      ]);
      const events = await h.callEvents(callId, undefined, 20_000);
      assert.equal(events.at(-1)?.type, 'CallCompleted', events.map((e) => e.type).join());
      await completed(await submit());
    });

    test('an outage is retried in place, never dead-lettered: the call completes once the store answers again', async () => {
      // The store refuses the first appends of one call as unavailable, then answers.
      const store = h.eventStore as EventStore & { append: EventStore['append'] };
      const original = store.append.bind(store);
      let refused = 0;
      const callId = await (async () => {
        store.append = async (streamId, events, options) => {
          if (streamId.startsWith('call-') && events[0]?.type === 'CallSubmitted' && refused < 3) {
            refused++;
            throw new EventStoreUnavailableError('injected outage');
          }
          return original(streamId, events, options);
        };
        return submit();
      })();
      try {
        await completed(callId);
      } finally {
        store.append = original;
      }
      assert.equal(refused, 3);
      const dead = (await h.eventLog.read(h.topics.deadLetter, { limit: 1000 })).filter((r) => r.key === callId);
      assert.equal(dead.length, 0, 'an outage must not dead-letter the record');
    });

    test('a projection that cannot take an event stops, /readyz names the event, and resumes after an operator skips it', async () => {
      const before = await submit();
      await completed(before);
      await listed(before);
      assert.equal((await readyz()).statusCode, 200);

      const poisonStream = `call-${randomUUID()}`;
      await h.eventStore.append(poisonStream, [{ type: 'CallSubmitted', data: { nonsense: true } }]);
      const poison = (await h.eventStore.readStream(poisonStream))[0]!;
      const afterPoison = await submit();
      await completed(afterPoison);

      const stopped = await eventually(
        async () => {
          const ready = await readyz();
          assert.equal(ready.statusCode, 503, JSON.stringify(ready.body));
          // Deal records stop on it too (they decode CallSubmitted): each is skipped once stopped.
          for (const projection of ['call-history', 'deals']) {
            const report = ready.body.components[`projection:${projection}`];
            assert.equal(report?.ready, false, projection);
            assert.match(report.reason!, new RegExp(`position ${poison.position}`));
          }
          return ready.body;
        },
        { timeoutMs: 20_000, intervalMs: 100 },
      );
      console.log(`# not ready: ${stopped.reasons?.join(' | ')}`);
      // The call after the bad event waits behind it.
      const waiting = await h.ingress.app.inject({
        method: 'GET',
        url: `/api/calls/${afterPoison}`,
        headers: { 'x-api-key': team.key },
      });
      assert.equal(waiting.statusCode, 404);

      for (const projection of ['call-history', 'deals']) {
        const skipped = await h.admin('POST', `/api/admin/projections/${projection}/skip`, {
          position: poison.position.toString(),
          reason: 'malformed test event',
        });
        assert.equal(skipped.statusCode, 201, skipped.body);
      }
      const unknown = await h.admin('POST', '/api/admin/projections/nope/skip', { position: '1', reason: 'x' });
      assert.equal(unknown.statusCode, 404);

      assert.equal((await listed(afterPoison, 30_000)).status, 'completed');
      await eventually(async () => assert.equal((await readyz()).statusCode, 200), {
        timeoutMs: 20_000,
        intervalMs: 100,
      });
      const skips = await h.eventStore.readStream(SKIPPED_EVENTS_STREAM);
      assert.ok(
        skips.some(
          (e) =>
            e.type === 'ProjectionEventSkipped' &&
            (e.data as { position: string }).position === poison.position.toString(),
        ),
      );
      await completed(await submit());
    });

    /** Calls submitted until one lands on `partition` (the ingress picks call ids). */
    const submitOnPartition = async (partition: number) => {
      for (let attempt = 0; attempt < 50; attempt++) {
        const callId = await submit();
        if (partitionForKey(callId, PARTITIONS) === partition) return callId;
      }
      throw new Error(`no call landed on partition ${partition}`);
    };

    test("a bug in one call's step fails that call alone (internal_error); the calls after it on its partition complete", async () => {
      const buggy = await submit({ transcript: `${TRANSCRIPT}\nRep: ANALYSER-BUG` });
      const events = await h.callEvents(buggy, undefined, 30_000);
      const failed = events.at(-1)!;
      assert.equal(failed.type, 'CallFailed', events.map((e) => e.type).join(', '));
      assert.equal((failed.data as { code: string }).code, 'internal_error');
      await completed(await submitOnPartition(partitionForKey(buggy, PARTITIONS)));
      const dead = (await h.eventLog.read(h.topics.deadLetter, { limit: 1000 })).filter((r) => r.key === buggy);
      assert.equal(dead.length, 0, 'a failed step is the call’s, not the record’s');
    });

    test('a bug that fails one record at intake again and again is set aside in the dead-letter topic, saying why; its partition goes on and is committed past it; a redrive once the bug is gone completes the call', async () => {
      const store = h.eventStore as EventStore & { append: EventStore['append'] };
      const original = store.append.bind(store);
      let bugged = true;
      let attempts = 0;
      store.append = async (streamId, events, options) => {
        if (bugged && events[0]?.type === 'CallSubmitted' && JSON.stringify(events[0].data).includes('INTAKE-BUG')) {
          attempts++;
          throw new TypeError("Cannot read properties of undefined (reading 'minutes')");
        }
        return original(streamId, events, options);
      };
      try {
        const stuck = await submit({ transcript: `${TRANSCRIPT}\nRep: INTAKE-BUG` });
        await eventually(() => assert.ok(attempts >= 1, 'not tried yet'), { timeoutMs: 20_000, intervalMs: 20 });
        // The next record of its partition: on the SQL logs it is handled beside the stuck one (which
        // is then set aside as others were handled); on Kafka it waits behind it, the partition held
        // (not fetched) until the stuck one is done, and the stuck one is set aside once records of
        // the member's other partitions were handled (calls submitted here that landed elsewhere),
        // or after `aloneMs` if none was.
        const partition = partitionForKey(stuck, PARTITIONS);
        const next = await submitOnPartition(partition);

        const dead = await eventually(
          async () => {
            const record = (await h.eventLog.read(h.topics.deadLetter, { limit: 1000 })).find((r) => r.key === stuck);
            assert.ok(record, `not set aside yet (${attempts} attempts)`);
            return record;
          },
          { timeoutMs: 20_000, intervalMs: 50 },
        );
        console.log(`# dead-letter reason: ${dead.headers.dlq_reason}`);
        assert.match(dead.headers.dlq_reason!, /TypeError: Cannot read properties of undefined \(reading 'minutes'\)/);
        await completed(next);
        assert.equal(dead.headers.dlq_source_partition, String(partition));
        const offset = BigInt(dead.headers.dlq_source_offset!);
        await eventually(
          async () => {
            const committed = await h.eventLog.committedOffset(h.groupId, h.topics.callsSubmitted, partition);
            assert.ok(committed !== undefined && committed > offset, `committed ${committed}, record at ${offset}`);
          },
          { timeoutMs: 20_000, intervalMs: 50 },
        );
        assert.equal((await h.eventStore.readStream(`call-${stuck}`)).length, 0);

        bugged = false;
        const redriven = await h.admin('POST', `/api/admin/topics/${encodeURIComponent(h.topics.deadLetter)}/redrive`, {
          partition: dead.partition,
          fromOffset: Number(dead.offset),
          limit: 1,
        });
        assert.equal(redriven.statusCode, 200, redriven.body);
        await completed(stuck);
      } finally {
        store.append = original;
      }
    });

    test('a bug that fails call history on one event again and again: reported stuck on it, with the error; an operator skips that event (only that one) and the history goes on', async () => {
      const history = backends.readModels.callHistory;
      const original = history.apply.bind(history);
      let bugged = true;
      let attempts = 0;
      let target: bigint | undefined;
      history.apply = async (events, checkpoint, options) => {
        const hit = events.find((e) => e.type === 'CallSubmitted' && JSON.stringify(e.data).includes('HISTORY-BUG'));
        if (bugged && hit) {
          attempts++;
          target = hit.position;
          throw new TypeError("Cannot read properties of undefined (reading 'durationSeconds')");
        }
        return original(events, checkpoint, options);
      };
      try {
        const before = await submit();
        await completed(before);
        await listed(before);
        const stuck = await submit({ transcript: `${TRANSCRIPT}\nRep: HISTORY-BUG` });
        await completed(stuck);
        const afterStuck = await submit();
        await completed(afterStuck);

        // Retried from its checkpoint after 1, 2, 4, 8 s: stuck after its fifth failure.
        const report = await eventually(
          async () => {
            const ready = await readyz();
            const history = ready.body.components['projection:call-history'] as Record<string, unknown>;
            assert.equal(history?.ready, false, JSON.stringify(history));
            assert.equal(history.stuck, true, JSON.stringify(history));
            return history;
          },
          { timeoutMs: 40_000, intervalMs: 200 },
        );
        console.log(`# not ready: ${String(report.reason)}`);
        assert.equal(report.position, target!.toString());
        assert.match(
          String(report.reason),
          /TypeError: Cannot read properties of undefined \(reading 'durationSeconds'\)/,
        );
        assert.ok(attempts >= 5, `${attempts} attempts`);

        const listing = await h.admin('GET', '/api/admin/projections');
        const status = listing
          .json<{ projections: { name: string; state: string; stoppedOn?: { position: string; error: string } }[] }>()
          .projections.find((p) => p.name === 'call-history')!;
        assert.equal(status.state, 'stuck', JSON.stringify(status));
        assert.equal(status.stoppedOn?.position, target!.toString());
        assert.match(status.stoppedOn.error, /TypeError/);
        const stuckStream = (await h.eventStore.readStream(PROJECTION_STATUS_STREAM)).filter(
          (e) => e.type === 'ProjectionStuck',
        );
        assert.equal(stuckStream.length, 1, 'recorded once');

        const earlier = (await h.eventStore.readStream(`call-${before}`))[0]!;
        const wrong = await h.admin('POST', '/api/admin/projections/call-history/skip', {
          position: earlier.position.toString(),
          reason: 'not this one',
        });
        assert.equal(wrong.statusCode, 409, wrong.body);
        const skipped = await h.admin('POST', '/api/admin/projections/call-history/skip', {
          position: target!.toString(),
          reason: 'a bug in the call-history projection: fixed in the next release',
        });
        assert.equal(skipped.statusCode, 201, skipped.body);

        assert.equal((await listed(afterStuck, 30_000)).status, 'completed');
        await eventually(async () => assert.equal((await readyz()).statusCode, 200), {
          timeoutMs: 20_000,
          intervalMs: 100,
        });
        bugged = false;
      } finally {
        history.apply = original;
      }
    });
  });
};
