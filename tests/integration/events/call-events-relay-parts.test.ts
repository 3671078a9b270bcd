/**
 * The relay publishes a batch of large call events in parts of about 1 MiB, one after the other:
 * a publish shares the log's group commit with the ingress's, so a POST queued behind a batch of
 * calls at their size limits waited for all of it. Every event is still relayed once, in order.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { pino } from 'pino';
import {
  inParts,
  RELAY_PUBLISH_MAX_CHARS,
  startCallEventsRelay,
} from '../../../services/projections/call-events-relay.ts';
import { callEvents } from '../../../shared/domain/call/call-catalogue.ts';
import type { EventLog, OutgoingRecord } from '../../../shared/ports/event-log.ts';
import { allTopics, topicNames } from '../../../shared/topics.ts';
import { openEmbeddedBackends } from '../../support/embedded-backends.ts';
import { eventually } from '../../support/eventually.ts';

const record = (value: string): { record: OutgoingRecord } => ({ record: { key: 'k', value } });

test('inParts: consecutive parts within the bound, a record larger than it alone, nothing lost or reordered', () => {
  const sizes = [400, 400, 300, 1200, 100, 999, 1, 0];
  const items = sizes.map((n, i) => ({ ...record('x'.repeat(n)), i }));
  // Each record counts its key ('k') too.
  const parts = inParts(items, 1003);
  assert.deepEqual(
    parts.map((part) => part.map((item) => item.i)),
    [[0, 1], [2], [3], [4], [5, 6, 7]],
  );
  assert.deepEqual(inParts([], 1003), []);
});

test('a batch of large call events is published in parts of at most 1 MiB, in order, each event once', async (t) => {
  const backends = openEmbeddedBackends();
  t.after(() => backends.cleanup());
  const topics = topicNames(`t${randomUUID().slice(0, 8)}.`);
  await backends.eventLog.ensureTopics(allTopics(topics).map((name) => ({ name, partitions: 1 })));
  const publishes: number[] = [];
  const counting: EventLog = Object.create(backends.eventLog) as EventLog;
  counting.publish = async (topic, records) => {
    if (topic === topics.callEvents) publishes.push(records.reduce((n, r) => n + r.key.length + r.value.length, 0));
    return backends.eventLog.publish(topic, records);
  };
  // Twelve events of about 300,000 characters each, appended before the relay starts: one batch.
  const callId = randomUUID();
  await backends.eventStore.append(
    callEvents.streamId(callId),
    Array.from({ length: 12 }, (_, n) => ({
      type: n === 0 ? 'CallSubmitted' : 'CallRetried',
      data: { n, notes: 'y'.repeat(300_000) },
    })),
  );
  const relay = startCallEventsRelay({
    eventStore: backends.eventStore,
    eventLog: counting,
    topics,
    logger: pino({ level: 'silent' }),
  });
  t.after(() => relay.stop());
  const relayed = await eventually(
    async () => {
      const read = await backends.eventLog.read(topics.callEvents, { limit: 100, maxBytes: 64 * 1024 * 1024 });
      assert.equal(read.length, 12);
      return read;
    },
    { timeoutMs: 20_000 },
  );
  assert.deepEqual(
    relayed.map((r) => (JSON.parse(r.value) as { n: number }).n),
    Array.from({ length: 12 }, (_, n) => n),
  );
  assert.ok(publishes.length >= 4, `twelve events of 300 kB take four parts at least: ${publishes.join(', ')}`);
  assert.ok(
    publishes.every((chars) => chars <= RELAY_PUBLISH_MAX_CHARS),
    `each part within ${RELAY_PUBLISH_MAX_CHARS}: ${publishes.join(', ')}`,
  );
});
