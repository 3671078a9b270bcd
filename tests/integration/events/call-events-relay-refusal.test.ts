/**
 * One call event the log refuses on its own (a record too large for the topic, say) must not stop
 * calls.events.v1 for every call: it is left out and logged, and the events around it are relayed.
 * An outage still holds the relay until it passes, losing nothing.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { pino } from 'pino';
import { startCallEventsRelay } from '../../../services/projections/call-events-relay.ts';
import { callEvents } from '../../../shared/domain/call/call-catalogue.ts';
import { type EventLog, EventLogUnavailableError } from '../../../shared/ports/event-log.ts';
import { allTopics, topicNames } from '../../../shared/topics.ts';
import { openEmbeddedBackends } from '../../support/embedded-backends.ts';
import { eventually } from '../../support/eventually.ts';

test('a call event the log refuses alone is left out and logged; the events around it, of every call, are relayed', async (t) => {
  const backends = openEmbeddedBackends();
  t.after(() => backends.cleanup());
  const topics = topicNames(`t${randomUUID().slice(0, 8)}.`);
  await backends.eventLog.ensureTopics(allTopics(topics).map((name) => ({ name, partitions: 1 })));
  let outage = true;
  const refusing: EventLog = Object.create(backends.eventLog) as EventLog;
  refusing.publish = async (topic, records) => {
    if (outage) throw new EventLogUnavailableError('broker unreachable (test)');
    // As a broker refuses a batch holding a record over the topic's max.message.bytes.
    if (records.some((r) => r.value.includes('TOO-BIG'))) throw new Error('MESSAGE_TOO_LARGE (test)');
    return backends.eventLog.publish(topic, records);
  };
  const [first, second] = [randomUUID(), randomUUID()];
  await backends.eventStore.append(callEvents.streamId(first), [
    { type: 'CallSubmitted', data: { n: 1 } },
    { type: 'CallRetried', data: { n: 2, note: 'TOO-BIG' } },
    { type: 'CallRetried', data: { n: 3 } },
  ]);
  await backends.eventStore.append(callEvents.streamId(second), [{ type: 'CallSubmitted', data: { n: 4 } }]);
  const lines: string[] = [];
  const logger = pino({ level: 'error' }, { write: (line: string) => void lines.push(line) });
  const relay = startCallEventsRelay({ eventStore: backends.eventStore, eventLog: refusing, topics, logger });
  t.after(() => relay.stop());

  // While the log is unreachable nothing is left out: the relay waits for it.
  await new Promise((resolve) => setTimeout(resolve, 500));
  assert.deepEqual(lines, []);
  outage = false;
  const records = await eventually(
    async () => {
      const read = await backends.eventLog.read(topics.callEvents, { limit: 100 });
      assert.deepEqual(
        read.map((r) => (JSON.parse(r.value) as { n: number }).n),
        [1, 3, 4],
      );
      return read;
    },
    { timeoutMs: 15_000 },
  );
  assert.equal(records.length, 3);
  const logged = lines.map((line) => JSON.parse(line) as { msg: string; callId?: string; eventType?: string });
  assert.equal(logged.length, 1, lines.join('\n'));
  assert.match(logged[0]!.msg, /left out of .*calls\.events\.v1: the log refuses it/);
  assert.deepEqual([logged[0]!.callId, logged[0]!.eventType], [first, 'CallRetried']);
});
