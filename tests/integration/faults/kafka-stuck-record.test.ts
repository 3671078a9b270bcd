/**
 * On Kafka a record retried in place holds its own partition, not the member's others. kafkajs
 * fetches from a broker again only once every batch of its last fetch is done; a batch that waited
 * for its stuck record would hold every partition of the member, so calls acknowledged (201) on the
 * other partitions would get no processing until the record is set aside. What must hold, with a
 * record whose intake throws a TypeError (a bug that only this call triggers), on one processor
 * that owns every partition:
 * - calls posted afterwards on the member's other partitions complete within a few seconds, long
 *   before the record's set-aside bound, while it is still retried and /readyz reports it;
 * - no later record of its own partition is handled before it is set aside, and the partition's
 *   committed offset does not pass it meanwhile;
 * - it is set aside once its bound has passed, saying other records were handled meanwhile; then
 *   the calls behind it complete, the committed offset passes it, and a redrive once the bug is
 *   gone completes it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createKafkaEventLog } from '../../../shared/adapters/event-log/kafka-event-log.ts';
import { partitionForKey } from '../../../shared/adapters/event-log/partitioner.ts';
import { createPostgresEventStore } from '../../../shared/adapters/event-store/postgres-event-store.ts';
import type { EventLog, LogRecord } from '../../../shared/ports/event-log.ts';
import type { EventStore } from '../../../shared/ports/event-store.ts';
import { backend } from '../../support/backends.ts';
import { eventually } from '../../support/eventually.ts';
import { createPipelineHarness, PARTITIONS, type PipelineHarness } from '../../support/pipeline-harness.ts';
import { freshSchema } from '../../support/postgres.ts';

const postgres = await backend('postgres');
const kafka = await backend('kafka');

const TRANSCRIPT =
  'Rep: Hello Dana, thanks for joining.\nDana: Happy to. Pricing is my worry.\nRep: We can start with a pilot.';
/** Set aside after 3 failures over 10 s while others are handled (two minutes if none is). */
const STUCK_AFTER = { attempts: 3, ms: 10_000, aloneMs: 120_000 };
/** How soon a call on another partition must complete once posted: well inside `STUCK_AFTER.ms`. */
const OTHERS_WITHIN_MS = 5_000;

describe(
  'on Kafka a record retried in place holds only its own partition',
  { skip: postgres.skip ?? kafka.skip },
  () => {
    let schema: ReturnType<typeof freshSchema>;
    let eventStore: EventStore & { append: EventStore['append'] };
    let eventLog: EventLog;
    let h: PipelineHarness;
    let team: { teamId: string; key: string };

    before(async () => {
      schema = freshSchema(postgres.url!);
      eventStore = await createPostgresEventStore({
        connectionString: postgres.url!,
        schema: schema.schema,
        pollMs: 50,
      });
      eventLog = await createKafkaEventLog({ brokers: kafka.url!.split(',') });
      h = await createPipelineHarness(
        { eventStore, eventLog },
        {},
        { retryThresholdMs: 1_000, stuckRecordAfter: STUCK_AFTER },
      );
      team = await h.team();
    });
    after(async () => {
      await h?.close();
      await eventLog?.close();
      await eventStore?.close();
      await schema?.drop();
    });

    const submit = async (transcript = TRANSCRIPT) => {
      const res = await h.ingest({ key: team.key, body: { transcript } });
      assert.equal(res.statusCode, 201, res.body);
      return res.json<{ callId: string }>().callId;
    };
    const completed = async (callId: string, timeoutMs = 30_000) => {
      const events = await h.callEvents(callId, undefined, timeoutMs);
      assert.equal(events.at(-1)!.type, 'CallCompleted', events.map((e) => e.type).join(', '));
      return events;
    };
    const deadLetterOf = async (callId: string): Promise<LogRecord | undefined> =>
      (await h.eventLog.read(h.topics.deadLetter, { limit: 1000 })).find((r) => r.key === callId);
    const readyz = async () => {
      const res = await h.ingress.app.inject({ method: 'GET', url: '/readyz' });
      return res.json<{ components: Record<string, { ready: boolean; reason?: string; partitions?: number }> }>();
    };

    test('calls on the other partitions complete while it is retried; its own partition waits, uncommitted past it; set aside after its bound, then redriven', async () => {
      const original = eventStore.append.bind(eventStore);
      let bugged = true;
      const failures: number[] = [];
      eventStore.append = async (streamId, events, options) => {
        if (bugged && events[0]?.type === 'CallSubmitted' && JSON.stringify(events[0].data).includes('INTAKE-BUG')) {
          failures.push(Date.now());
          throw new TypeError("Cannot read properties of undefined (reading 'minutes')");
        }
        return original(streamId, events, options);
      };
      try {
        const stuck = await submit(`${TRANSCRIPT}\nRep: INTAKE-BUG`);
        const partition = partitionForKey(stuck, PARTITIONS);
        await eventually(() => assert.ok(failures.length >= 1, 'not tried yet'), { timeoutMs: 20_000, intervalMs: 20 });
        const ready = await readyz();
        assert.equal(ready.components.processor?.partitions, PARTITIONS, 'one member owns every partition');
        const offset = (await h.eventLog.read(h.topics.callsSubmitted, { partition, limit: 1000 })).find(
          (r) => r.key === stuck,
        )!.offset;

        // Calls posted afterwards until every partition has one: those on the stuck one's wait behind it.
        const others: { callId: string; postedAt: number }[] = [];
        const behind: string[] = [];
        const covered = new Set<number>();
        for (let attempt = 0; covered.size < PARTITIONS && attempt < 60; attempt++) {
          const postedAt = Date.now();
          const callId = await submit();
          const p = partitionForKey(callId, PARTITIONS);
          covered.add(p);
          if (p === partition) behind.push(callId);
          else others.push({ callId, postedAt });
        }
        assert.equal(covered.size, PARTITIONS, 'no call landed on some partition');

        for (const other of others) {
          await completed(other.callId, OTHERS_WITHIN_MS);
          const tookMs = Date.now() - other.postedAt;
          assert.ok(
            tookMs < OTHERS_WITHIN_MS,
            `a call on another partition completed ${tookMs} ms after it was posted`,
          );
        }
        const handledAt = Date.now();
        console.log(
          `# ${others.length} call(s) on the other partitions completed within ${handledAt - others[0]!.postedAt} ms; the stuck record failed ${failures.length} times so far`,
        );
        assert.equal(await deadLetterOf(stuck), undefined, 'set aside already: the test proves nothing');
        for (const callId of behind)
          assert.equal(
            (await h.eventStore.readStream(`call-${callId}`)).length,
            0,
            'a later record of its partition went first',
          );
        const committed = await h.eventLog.committedOffset(h.groupId, h.topics.callsSubmitted, partition);
        assert.ok(
          committed === undefined || committed <= offset,
          `committed ${committed} past the record at ${offset}`,
        );
        const processor = (await readyz()).components.processor!;
        assert.equal(processor.ready, false, JSON.stringify(processor));
        assert.match(
          processor.reason!,
          /1 record\(s\) retrying since .*TypeError: Cannot read properties of undefined \(reading 'minutes'\)/,
        );

        const dead = await eventually(
          async () => {
            const record = await deadLetterOf(stuck);
            assert.ok(record, `not set aside yet (${failures.length} failures)`);
            return record;
          },
          { timeoutMs: STUCK_AFTER.ms + 20_000, intervalMs: 100 },
        );
        console.log(`# dead-letter reason: ${dead.headers.dlq_reason}`);
        assert.ok(dead.timestamp.getTime() - failures[0]! >= STUCK_AFTER.ms, 'set aside before its bound');
        assert.match(dead.headers.dlq_reason!, /while other records were handled/);
        assert.equal(dead.headers.dlq_source_offset, offset.toString());
        for (const callId of behind) {
          const events = await completed(callId);
          assert.ok(events[0]!.recordedAt >= dead.timestamp, 'handled before the record ahead of it was set aside');
        }
        await eventually(
          async () => {
            const now = await h.eventLog.committedOffset(h.groupId, h.topics.callsSubmitted, partition);
            assert.ok(now !== undefined && now > offset, `committed ${now}, record at ${offset}`);
          },
          { timeoutMs: 20_000, intervalMs: 50 },
        );

        bugged = false;
        const redriven = await h.admin('POST', `/api/admin/topics/${encodeURIComponent(h.topics.deadLetter)}/redrive`, {
          partition: dead.partition,
          fromOffset: Number(dead.offset),
          limit: 1,
        });
        assert.equal(redriven.statusCode, 200, redriven.body);
        await completed(stuck);
        await completed(await submit());
      } finally {
        eventStore.append = original;
      }
    });
  },
);
