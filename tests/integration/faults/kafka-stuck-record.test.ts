/**
 * On Kafka a record retried in place holds its own partition, not the member's others. kafkajs
 * fetches from a broker again only once every batch of its last fetch is done; a batch that waited
 * for its stuck record would hold every partition of the member, so calls acknowledged (201) on the
 * other partitions would get no processing until the record is set aside. What must hold, with a
 * record whose intake throws a TypeError (a bug that only this call triggers):
 * - on one processor that owns every partition, calls posted afterwards on its other partitions
 *   complete within a few seconds, long before the record's set-aside bound, while it is still
 *   retried and /readyz reports it; no later record of its own partition is handled before it is
 *   set aside, and the partition's committed offset does not pass it meanwhile; it is set aside once
 *   its bound has passed, saying other records were handled meanwhile; then the calls behind it
 *   complete, the committed offset passes it, and a redrive once the bug is gone completes it;
 * - the processor stopped while the record holds its partition stops at once, commits nothing past
 *   it, and the next processor takes it up: set aside once, everything else completes;
 * - a second member joining the group while the record holds its partition (a rebalance), and the
 *   first leaving afterwards: calls on every partition but the record's complete within seconds of
 *   the join, the record is set aside once (by whichever member then owns it), and every call
 *   completes.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
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
/**
 * Set aside after 3 failures over 10 s while others are handled, 30 s if none is (a member that
 * owns the record's partition alone, after a rebalance).
 */
const STUCK_AFTER = { attempts: 3, ms: 10_000, aloneMs: 30_000 };
/** How soon a call on another partition must complete once posted: well inside `STUCK_AFTER.ms`. */
const OTHERS_WITHIN_MS = 5_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

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
    });
    // A team per test: its key is allowed 30 requests a minute.
    beforeEach(async () => {
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
    const deadLettersOf = async (callId: string): Promise<LogRecord[]> =>
      (await h.eventLog.read(h.topics.deadLetter, { limit: 1000 })).filter((r) => r.key === callId);
    const setAside = (callId: string, timeoutMs: number) =>
      eventually(
        async () => {
          const [record] = await deadLettersOf(callId);
          assert.ok(record, 'not set aside yet');
          return record;
        },
        { timeoutMs, intervalMs: 100 },
      );
    const committed = (partition: number) => h.eventLog.committedOffset(h.groupId, h.topics.callsSubmitted, partition);
    const readyz = async () => {
      const res = await h.ingress.app.inject({ method: 'GET', url: '/readyz' });
      return res.json<{ components: Record<string, { ready: boolean; reason?: string; partitions?: number }> }>();
    };

    /**
     * The store's append throws a TypeError for the CallSubmitted of a call carrying `marker`, as a
     * bug would, until `fixed()`; `failures` are the times it did.
     */
    const bug = (marker: string) => {
      const original = eventStore.append.bind(eventStore);
      let bugged = true;
      const failures: number[] = [];
      eventStore.append = async (streamId, events, options) => {
        if (bugged && events[0]?.type === 'CallSubmitted' && JSON.stringify(events[0].data).includes(marker)) {
          failures.push(Date.now());
          throw new TypeError("Cannot read properties of undefined (reading 'minutes')");
        }
        return original(streamId, events, options);
      };
      return {
        failures,
        fixed: () => (bugged = false),
        restore: () => (eventStore.append = original),
      };
    };

    /** Submits a call with the bug's marker; resolves once its record has failed, with where it is. */
    const stuckCall = async (marker: string, failures: number[]) => {
      const callId = await submit(`${TRANSCRIPT}\nRep: ${marker}`);
      const partition = partitionForKey(callId, PARTITIONS);
      await eventually(() => assert.ok(failures.length >= 1, 'not tried yet'), { timeoutMs: 20_000, intervalMs: 20 });
      const offset = (await h.eventLog.read(h.topics.callsSubmitted, { partition, limit: 1000 })).find(
        (r) => r.key === callId,
      )!.offset;
      return { callId, partition, offset };
    };

    /** Calls posted until every partition has one: those on `partition` are `behind`, the rest `others`. */
    const callsOnEveryPartition = async (partition: number) => {
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
      return { others, behind };
    };

    const notHandled = async (callIds: string[]) => {
      for (const callId of callIds)
        assert.equal(
          (await h.eventStore.readStream(`call-${callId}`)).length,
          0,
          'a later record of its partition went first',
        );
    };

    test('calls on the other partitions complete while it is retried; its own partition waits, uncommitted past it; set aside after its bound, then redriven', async () => {
      const intake = bug('INTAKE-BUG-ALONE');
      try {
        const stuck = await stuckCall('INTAKE-BUG-ALONE', intake.failures);
        assert.equal((await readyz()).components.processor?.partitions, PARTITIONS, 'one member owns every partition');

        const { others, behind } = await callsOnEveryPartition(stuck.partition);
        for (const other of others) {
          await completed(other.callId, OTHERS_WITHIN_MS);
          const tookMs = Date.now() - other.postedAt;
          assert.ok(
            tookMs < OTHERS_WITHIN_MS,
            `a call on another partition completed ${tookMs} ms after it was posted`,
          );
        }
        console.log(
          `# ${others.length} call(s) on the other partitions completed within ${Date.now() - others[0]!.postedAt} ms; the stuck record failed ${intake.failures.length} times so far`,
        );
        assert.deepEqual(await deadLettersOf(stuck.callId), [], 'set aside already: the test proves nothing');
        await notHandled(behind);
        const now = await committed(stuck.partition);
        assert.ok(now === undefined || now <= stuck.offset, `committed ${now} past the record at ${stuck.offset}`);
        const processor = (await readyz()).components.processor!;
        assert.equal(processor.ready, false, JSON.stringify(processor));
        assert.match(
          processor.reason!,
          /1 record\(s\) retrying since .*TypeError: Cannot read properties of undefined \(reading 'minutes'\)/,
        );

        const dead = await setAside(stuck.callId, STUCK_AFTER.ms + 20_000);
        console.log(`# dead-letter reason: ${dead.headers.dlq_reason}`);
        assert.ok(dead.timestamp.getTime() - intake.failures[0]! >= STUCK_AFTER.ms, 'set aside before its bound');
        assert.match(dead.headers.dlq_reason!, /while other records were handled/);
        assert.equal(dead.headers.dlq_source_offset, stuck.offset.toString());
        for (const callId of behind) {
          const events = await completed(callId);
          assert.ok(events[0]!.recordedAt >= dead.timestamp, 'handled before the record ahead of it was set aside');
        }
        await eventually(
          async () => {
            const now = await committed(stuck.partition);
            assert.ok(now !== undefined && now > stuck.offset, `committed ${now}, record at ${stuck.offset}`);
          },
          { timeoutMs: 20_000, intervalMs: 50 },
        );

        intake.fixed();
        const redriven = await h.admin('POST', `/api/admin/topics/${encodeURIComponent(h.topics.deadLetter)}/redrive`, {
          partition: dead.partition,
          fromOffset: Number(dead.offset),
          limit: 1,
        });
        assert.equal(redriven.statusCode, 200, redriven.body);
        await completed(stuck.callId);
        await completed(await submit());
      } finally {
        intake.restore();
      }
    });

    test('the processor stopped while the record holds its partition stops at once and commits nothing past it; the next one takes it up', async () => {
      const intake = bug('INTAKE-BUG-STOP');
      try {
        const stuck = await stuckCall('INTAKE-BUG-STOP', intake.failures);
        const { others, behind } = await callsOnEveryPartition(stuck.partition);
        for (const other of others) await completed(other.callId, OTHERS_WITHIN_MS);

        const stopping = Date.now();
        await h.stopProcessor();
        const stopMs = Date.now() - stopping;
        console.log(`# stopped in ${stopMs} ms while the record was retried in place`);
        assert.ok(stopMs < 5_000, `stopping took ${stopMs} ms`);
        const now = await committed(stuck.partition);
        assert.ok(now === undefined || now <= stuck.offset, `committed ${now} past the record at ${stuck.offset}`);
        assert.deepEqual(await deadLettersOf(stuck.callId), []);
        await notHandled(behind);

        await h.startProcessor();
        const after = await callsOnEveryPartition(stuck.partition);
        for (const other of after.others) await completed(other.callId, 15_000);
        const dead = await setAside(stuck.callId, STUCK_AFTER.aloneMs + 20_000);
        for (const callId of [...behind, ...after.behind]) await completed(callId);
        await sleep(2_000);
        assert.equal((await deadLettersOf(stuck.callId)).length, 1, 'set aside more than once');
        assert.equal(dead.headers.dlq_source_offset, stuck.offset.toString());
      } finally {
        intake.restore();
      }
    });

    test('a second member joining while the record holds its partition, and the first leaving: the calls of the other partitions go on within seconds, the record is set aside once, every call completes', async () => {
      const intake = bug('INTAKE-BUG-JOIN');
      const first = h.processor;
      try {
        const stuck = await stuckCall('INTAKE-BUG-JOIN', intake.failures);
        await sleep(2_000); // held by now

        const joining = Date.now();
        await h.startProcessor();
        const { others, behind } = await callsOnEveryPartition(stuck.partition);
        for (const other of others) await completed(other.callId, 15_000);
        console.log(
          `# after the join, the calls on the other partitions completed within ${Date.now() - joining} ms of it`,
        );
        await notHandled(behind);

        const dead = await setAside(stuck.callId, STUCK_AFTER.aloneMs + 20_000);
        console.log(`# dead-letter reason: ${dead.headers.dlq_reason}`);
        for (const callId of behind) await completed(callId);

        await first.stop();
        const later = await callsOnEveryPartition(stuck.partition);
        for (const callId of [...later.others.map((o) => o.callId), ...later.behind]) await completed(callId);
        assert.equal((await deadLettersOf(stuck.callId)).length, 1, 'set aside more than once');
      } finally {
        intake.restore();
        await first.stop();
      }
    });
  },
);
