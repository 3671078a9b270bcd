/**
 * One deal.outcome.updated the log refuses for what it is (`RecordRefusedError`: a record too
 * large for the topic, say) must not stop deals.outcome-updated.v1 for every team: it is left out
 * and logged, and the deals around it are published. The publisher sent up to 200 outbox entries
 * in one publish and retried it whole every second: the refused deal was refused again, its
 * batch-mates published again and again, and every later deal waited behind it.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { pino } from 'pino';
import { RecordRefusedError } from '../../../shared/ports/event-log.ts';
import { overriding } from '../../support/embedded-ingress.ts';
import { type EmbeddedPipeline, openEmbeddedPipeline } from '../../support/embedded-pipeline.ts';
import { eventually } from '../../support/eventually.ts';

const TRANSCRIPT = 'Rep: Hi Dana, shall we talk pricing?\nDana: Yes, send the quote.';

let pipeline: EmbeddedPipeline;
const lines: Array<{ msg: string; callId?: string }> = [];
let refusals = 0;

before(async () => {
  pipeline = await openEmbeddedPipeline(
    {},
    {
      projectionsLogger: pino({ level: 'error' }, { write: (line: string) => void lines.push(JSON.parse(line)) }),
      // As the Kafka adapter refuses a batch holding a record over the topic's max.message.bytes.
      wrapEventLog: (log) =>
        overriding(log, {
          publish: (topic: string, records: Parameters<typeof log.publish>[1]) => {
            if (topic.endsWith('deals.outcome-updated.v1') && records.some((r) => r.value.includes('TOO-BIG'))) {
              refusals++;
              return Promise.reject(new RecordRefusedError('MESSAGE_TOO_LARGE (test)'));
            }
            return log.publish(topic, records);
          },
        }),
    },
  );
});
after(() => pipeline.close());

test('a deal the log refuses alone is left out and logged; the deals after it are published once', async () => {
  const { h } = pipeline;
  const { key } = await h.team();
  const ids: string[] = [];
  for (const notes of ['TOO-BIG notes', 'first after', 'second after']) {
    const accepted = await h.ingest({ key, body: { transcript: TRANSCRIPT, dealSize: 1200, dealNotes: notes } });
    assert.equal(accepted.statusCode, 201, accepted.body);
    ids.push(accepted.json<{ callId: string }>().callId);
  }
  const [refused, ...others] = ids;
  const published = await eventually(
    async () => {
      const records = await h.eventLog.read(h.topics.dealOutcomeUpdated, { limit: 100 });
      assert.deepEqual(records.map((r) => r.key).sort(), [...others].sort());
      return records;
    },
    { timeoutMs: 20_000 },
  );
  // Past a few of the publisher's retry rounds (one a second): nothing is published again.
  await new Promise((resolve) => setTimeout(resolve, 2_500));
  const again = await h.eventLog.read(h.topics.dealOutcomeUpdated, { limit: 100 });
  assert.equal(again.length, published.length, 'the deals after the refused one are not published again');
  const refusalsSoFar = refusals;
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  assert.equal(refusals, refusalsSoFar, 'the refused deal is not sent again');
  const logged = lines.filter((l) => /left out of/.test(l.msg));
  assert.deepEqual(
    logged.map((l) => l.callId),
    [refused],
  );
  assert.match(logged[0]!.msg, /deal\.outcome\.updated left out of .*deals\.outcome-updated\.v1: the log refuses it/);
});
