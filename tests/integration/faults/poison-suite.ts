/**
 * One bad record never stops another, on every backend:
 * - a CallSubmitted record the event store refuses for good (PostgreSQL: U+0000 in a string) goes
 *   to the dead-letter topic with the reason; the member keeps its partitions and the next call
 *   completes;
 * - a failure that is an outage (the store unavailable) is retried in place, never dead-lettered;
 * - an event the projections cannot take stops them, /readyz says which event, and after an
 *   operator skips it (admin API) they resume: later calls appear in the history again.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { EventLog } from '../../../shared/ports/event-log.ts';
import { EventStoreUnavailableError, type EventStore } from '../../../shared/ports/event-store.ts';
import type { ReadModels } from '../../../shared/ports/read-models.ts';
import { SKIPPED_EVENTS_STREAM } from '../../../services/projections/skipped-events.ts';
import { eventually } from '../../support/eventually.ts';
import { createPipelineHarness, type PipelineHarness } from '../../support/pipeline-harness.ts';

export interface PoisonBackends {
  eventStore: EventStore;
  eventLog: EventLog;
  readModels: ReadModels;
  cleanup(): Promise<void>;
}

const TRANSCRIPT =
  'Rep: Hello Dana, thanks for joining.\nDana: Happy to. Pricing is my worry.\nRep: We can start with a pilot.';

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
      h = await createPipelineHarness(backends, {}, { retryThresholdMs: 60_000 });
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
  });
};
