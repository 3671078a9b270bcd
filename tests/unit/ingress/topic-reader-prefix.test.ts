/**
 * The admin topic reader reads this deployment's topics only. Behind a TOPIC_PREFIX a topic may be
 * named with or without the prefix (the README's topics table names them without); any other name
 * is a 404 naming the topics it may be. On a shared Kafka cluster the name without the prefix is
 * another deployment's topic, which the reader read before.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createSqliteEventLog } from '../../../shared/adapters/event-log/sql-event-log.ts';
import { createSqliteEventStore } from '../../../shared/adapters/event-store/sqlite-event-store.ts';
import { openSqlite } from '../../../shared/adapters/sqlite/sqlite-database.ts';
import { topicNames } from '../../../shared/topics.ts';
import { createHarness, type Harness } from '../../support/ingress-harness.ts';
import { tempDir } from '../../support/temp-dir.ts';

const ours = topicNames('acme.');
const theirs = topicNames('');
const dir = tempDir();
const opened = openSqlite(dir.path);
const eventStore = createSqliteEventStore(opened.db);
const eventLog = createSqliteEventLog(opened.db);
let h: Harness;

type Messages = { messages: Array<{ key: string; value: unknown }> };
type Problem = { code: string; errors: Array<{ field: string; message: string }> };

before(async () => {
  // Two deployments on one log: this one behind `acme.`, another without a prefix. This one's deal
  // topic is not created (as on a cluster that creates topics on first use).
  await eventLog.ensureTopics(
    [ours.callsSubmitted, ours.callEvents, ours.deadLetter, theirs.callsSubmitted].map((name) => ({
      name,
      partitions: 1,
    })),
  );
  await eventLog.publish(ours.callsSubmitted, [{ key: 'our-call', value: '{"ours":true}' }]);
  await eventLog.publish(theirs.callsSubmitted, [{ key: 'their-call', value: '{"theirs":true}' }]);
  await eventLog.publish(ours.deadLetter, [
    { key: 'as-received', value: '{"dealSize":12345678901234567890,"x":1,"x":2,"z":-0,"f":1.50}' },
    { key: 'a-string', value: '"quoted"' },
    { key: 'text', value: 'not json' },
    { key: 'ours', value: '{"dealSize":1200,"notes":"\\ud800 é"}' },
  ]);
  h = await createHarness({ eventStore, eventLog, topics: ours });
});

after(async () => {
  await h.close();
  await eventLog.close();
  await eventStore.close();
  opened.close();
  dir.remove();
});

test("a topic named without the prefix is this deployment's, not the unprefixed one", async () => {
  const res = await h.admin('GET', '/api/admin/topics/calls.submitted.v1/messages');
  assert.equal(res.statusCode, 200, res.body);
  assert.deepEqual(
    res.json<Messages>().messages.map((m) => [m.key, m.value]),
    [['our-call', { ours: true }]],
  );
});

test('a value is shown parsed only when it writes back to the same text; otherwise exactly as stored', async () => {
  const res = await h.admin('GET', '/api/admin/topics/calls.dead-letter.v1/messages');
  assert.equal(res.statusCode, 200, res.body);
  assert.deepEqual(
    res
      .json<{ messages: Array<{ key: string; value: unknown; valueFormat: string }> }>()
      .messages.map((m) => [m.key, m.valueFormat, m.value]),
    [
      ['as-received', 'text', '{"dealSize":12345678901234567890,"x":1,"x":2,"z":-0,"f":1.50}'],
      ['a-string', 'json', 'quoted'],
      ['text', 'text', 'not json'],
      ['ours', 'json', { dealSize: 1200, notes: '\ud800 é' }],
    ],
  );
});

test('a topic named with the prefix reads the same', async () => {
  const res = await h.admin('GET', `/api/admin/topics/${encodeURIComponent(ours.callsSubmitted)}/messages`);
  assert.equal(res.statusCode, 200, res.body);
  assert.deepEqual(
    res.json<Messages>().messages.map((m) => m.key),
    ['our-call'],
  );
});

test("a name that is none of this deployment's topics is a 404 naming the topics it may be", async () => {
  for (const name of ['other.topic', 'acme.other.topic', 'beta.calls.submitted.v1']) {
    const res = await h.admin('GET', `/api/admin/topics/${encodeURIComponent(name)}/messages`);
    assert.equal(res.statusCode, 404, `${name}: ${res.body}`);
    const problem = res.json<Problem>();
    assert.equal(problem.code, 'NOT_FOUND');
    assert.equal(problem.errors[0]!.field, 'topic');
    for (const topic of Object.values(ours))
      assert.match(problem.errors[0]!.message, new RegExp(topic.replace(/\./g, '\\.')));
  }
});

test('a topic of this deployment that nothing has created yet holds no messages', async () => {
  const res = await h.admin('GET', '/api/admin/topics/deals.outcome-updated.v1/messages');
  assert.equal(res.statusCode, 200, res.body);
  assert.deepEqual(res.json<Messages>().messages, []);
});

test('the dead-letter redrive takes its topic named with or without the prefix, and no other', async () => {
  for (const name of ['calls.dead-letter.v1', ours.deadLetter]) {
    const res = await h.admin('POST', `/api/admin/topics/${encodeURIComponent(name)}/redrive`, { limit: 10 });
    assert.equal(res.statusCode, 200, `${name}: ${res.body}`);
  }
  const res = await h.admin('POST', `/api/admin/topics/${encodeURIComponent('beta.calls.dead-letter.v1')}/redrive`, {
    limit: 10,
  });
  assert.equal(res.statusCode, 400, res.body);
  assert.equal(res.json<Problem>().errors[0]!.field, 'topic');
});
