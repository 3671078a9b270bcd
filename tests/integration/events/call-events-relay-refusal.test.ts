/**
 * One call event the log refuses for what it is (`RecordRefusedError`: a record too large for the
 * topic, say) must not stop calls.events.v1 for every call: it is left out and logged, and the
 * events around it are relayed. Any other failure loses nothing: an outage holds the relay until it
 * passes, and a non-retriable error that is not about the records (Kafka's UNKNOWN_SERVER_ERROR,
 * say, often transient) fails the relay, which is restarted, reported not ready meanwhile, and
 * relays the event once the error clears.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { pino } from 'pino';
import { startCallEventsRelay } from '../../../services/projections/call-events-relay.ts';
import { supervised } from '../../../services/projections/supervised.ts';
import { callEvents } from '../../../shared/domain/call/call-catalogue.ts';
import { type EventLog, EventLogUnavailableError, RecordRefusedError } from '../../../shared/ports/event-log.ts';
import { allTopics, topicNames } from '../../../shared/topics.ts';
import { openEmbeddedBackends } from '../../support/embedded-backends.ts';
import { eventually } from '../../support/eventually.ts';

test('a call event the log refuses alone is left out and logged; one a non-retriable server error holds back is relayed once it clears', async (t) => {
  const backends = openEmbeddedBackends();
  t.after(() => backends.cleanup());
  const topics = topicNames(`t${randomUUID().slice(0, 8)}.`);
  await backends.eventLog.ensureTopics(allTopics(topics).map((name) => ({ name, partitions: 1 })));
  let outage = true;
  // A server error answered twice for any publish holding the HICCUP event, then never again: one
  // try of the batch and one of the event alone would both meet it.
  let serverErrors = 2;
  const refusing: EventLog = Object.create(backends.eventLog) as EventLog;
  refusing.publish = async (topic, records) => {
    if (outage) throw new EventLogUnavailableError('broker unreachable (test)');
    if (serverErrors > 0 && records.some((r) => r.value.includes('HICCUP'))) {
      serverErrors--;
      // As kafkajs raises UNKNOWN_SERVER_ERROR: not retriable, yet not about the records.
      throw Object.assign(new Error('UNKNOWN_SERVER_ERROR (test)'), { retriable: false });
    }
    // As the Kafka adapter refuses a batch holding a record over the topic's max.message.bytes.
    if (records.some((r) => r.value.includes('TOO-BIG'))) throw new RecordRefusedError('MESSAGE_TOO_LARGE (test)');
    return backends.eventLog.publish(topic, records);
  };
  const [first, second, third] = [randomUUID(), randomUUID(), randomUUID()];
  await backends.eventStore.append(callEvents.streamId(first), [
    { type: 'CallSubmitted', data: { n: 1 } },
    { type: 'CallRetried', data: { n: 2, note: 'TOO-BIG' } },
    { type: 'CallRetried', data: { n: 3 } },
  ]);
  await backends.eventStore.append(callEvents.streamId(second), [{ type: 'CallSubmitted', data: { n: 4 } }]);
  await backends.eventStore.append(callEvents.streamId(third), [
    { type: 'CallSubmitted', data: { n: 5, note: 'HICCUP' } },
  ]);
  const lines: string[] = [];
  const logger = pino({ level: 'error' }, { write: (line: string) => void lines.push(line) });
  const relay = supervised(
    'call-events relay',
    () => startCallEventsRelay({ eventStore: backends.eventStore, eventLog: refusing, topics, logger }),
    logger,
  );
  t.after(() => relay.stop());
  const leftOutLines = () =>
    lines
      .map((line) => JSON.parse(line) as { msg: string; callId?: string; eventType?: string })
      .filter((entry) => /left out of/.test(entry.msg));

  // While the log is unreachable nothing is left out: the relay waits for it.
  await new Promise((resolve) => setTimeout(resolve, 500));
  assert.deepEqual(lines, []);
  outage = false;
  // The server error fails the relay, which says so until it runs again.
  await eventually(
    async () => {
      const report = relay.report(() => false);
      assert.equal(report.ready, false);
      assert.match(String(report.reason), /UNKNOWN_SERVER_ERROR/);
    },
    { timeoutMs: 5_000 },
  );
  const records = await eventually(
    async () => {
      const read = await backends.eventLog.read(topics.callEvents, { limit: 100 });
      assert.deepEqual(
        read.map((r) => (JSON.parse(r.value) as { n: number }).n),
        [1, 3, 4, 5],
      );
      return read;
    },
    { timeoutMs: 15_000 },
  );
  assert.equal(records.length, 4);
  assert.equal(serverErrors, 0);
  const logged = leftOutLines();
  assert.equal(logged.length, 1, lines.join('\n'));
  assert.match(logged[0]!.msg, /left out of .*calls\.events\.v1: the log refuses it/);
  assert.deepEqual([logged[0]!.callId, logged[0]!.eventType], [first, 'CallRetried']);
});
