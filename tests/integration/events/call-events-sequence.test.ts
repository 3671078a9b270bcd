/**
 * `ce_sequence` on calls.events.v1 follows the CloudEvents sequence extension: a string whose
 * lexicographic order is the events' order. A bare revision would sort "10" before "9"; relayed on
 * the embedded event store and log, a call of twelve events keeps its order as strings.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { pino } from 'pino';
import { startCallEventsRelay } from '../../../services/projections/call-events-relay.ts';
import { callEvents } from '../../../shared/domain/call/call-catalogue.ts';
import { allTopics, topicNames } from '../../../shared/topics.ts';
import { openEmbeddedBackends } from '../../support/embedded-backends.ts';
import { eventually } from '../../support/eventually.ts';

test('revisions 9 and 10 of one call relayed: ce_sequence of 9 sorts before that of 10', async (t) => {
  const backends = openEmbeddedBackends();
  t.after(() => backends.cleanup());
  const topics = topicNames(`t${randomUUID().slice(0, 8)}.`);
  await backends.eventLog.ensureTopics(allTopics(topics).map((name) => ({ name, partitions: 1 })));
  const callId = randomUUID();
  // The relay forwards events as stored, without decoding them: their types are all it reads.
  await backends.eventStore.append(
    callEvents.streamId(callId),
    Array.from({ length: 12 }, (_, i) => ({ type: i === 0 ? 'CallSubmitted' : 'CallRetried', data: { n: i } })),
  );
  const relay = startCallEventsRelay({
    eventStore: backends.eventStore,
    eventLog: backends.eventLog,
    topics,
    logger: pino({ level: 'silent' }),
  });
  t.after(() => relay.stop());

  const records = await eventually(async () => {
    const read = await backends.eventLog.read(topics.callEvents, { limit: 100 });
    assert.equal(read.length, 12);
    return read;
  });
  const sequences = records.map((r) => r.headers.ce_sequence!);
  const h9 = sequences[9]!;
  const h10 = sequences[10]!;
  assert.ok(h9 < h10, `ce_sequence ${h9} of revision 9 sorts after ${h10} of revision 10`);
  assert.deepEqual([...sequences].sort(), sequences, 'the sequences sort as strings in stream order');
  assert.deepEqual(
    sequences.map((s) => Number(s)),
    records.map((r) => (JSON.parse(r.value) as { n: number }).n),
    'each ce_sequence reads as its revision',
  );
});
