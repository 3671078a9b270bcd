/**
 * A call event of a type this version does not know (written by a newer version during an
 * upgrade) is not dropped from calls.events.v1: the relay relays the events before it, stops on it
 * (reported not ready, naming it) without publishing those again at each restart, and relays it
 * and what follows once a version that knows the type runs (its checkpoint stays before it). It
 * was dropped without a word, its checkpoint moved past it.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { pino } from 'pino';
import { CALL_EVENTS_RELAY, startCallEventsRelay } from '../../../services/projections/call-events-relay.ts';
import { supervised } from '../../../services/projections/supervised.ts';
import { callEvents } from '../../../shared/domain/call/call-catalogue.ts';
import { allTopics, topicNames } from '../../../shared/topics.ts';
import { openEmbeddedBackends } from '../../support/embedded-backends.ts';
import { eventually } from '../../support/eventually.ts';

test('a call event of a type this version does not know stops the relay on it, after the events before it', async (t) => {
  const backends = openEmbeddedBackends();
  t.after(() => backends.cleanup());
  const topics = topicNames(`t${randomUUID().slice(0, 8)}.`);
  await backends.eventLog.ensureTopics(allTopics(topics).map((name) => ({ name, partitions: 1 })));
  const [first, second, third] = [randomUUID(), randomUUID(), randomUUID()];
  await backends.eventStore.append(callEvents.streamId(first), [{ type: 'CallSubmitted', data: { n: 1 } }]);
  await backends.eventStore.append(callEvents.streamId(second), [{ type: 'CallNoted', data: { n: 2 } }]);
  await backends.eventStore.append(callEvents.streamId(third), [{ type: 'CallSubmitted', data: { n: 3 } }]);
  const unknown = (await backends.eventStore.readStream(callEvents.streamId(second)))[0]!;

  const relay = supervised(
    'call-events relay',
    () =>
      startCallEventsRelay({
        eventStore: backends.eventStore,
        eventLog: backends.eventLog,
        topics,
        logger: pino({ level: 'silent' }),
      }),
    pino({ level: 'silent' }),
  );
  t.after(() => relay.stop());
  await eventually(
    () => {
      const report = relay.report(() => false);
      assert.equal(report.ready, false);
      assert.match(String(report.reason), /CallNoted .*not a call event type this version knows/);
      assert.match(String(report.reason), new RegExp(`position ${unknown.position}`));
    },
    { timeoutMs: 10_000 },
  );
  // The event before it was relayed once, though the relay has restarted on the unknown one since.
  await new Promise((resolve) => setTimeout(resolve, 2_500));
  const relayed = await backends.eventLog.read(topics.callEvents, { limit: 100 });
  assert.deepEqual(
    relayed.map((record) => (JSON.parse(record.value) as { n: number }).n),
    [1],
  );
  assert.equal(await backends.eventStore.readCheckpoint(CALL_EVENTS_RELAY), unknown.position - 1n);
});
