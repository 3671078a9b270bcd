/**
 * A topic's offsets while a partition's leader moves: kafkajs's `fetchTopicOffsets` gives up at
 * once on "not the leader" (a topic made a moment before, a broker restarting) and keeps the stale
 * leaders. The adapter asks again after re-reading the cluster's metadata. Over a fake admin, so
 * the broker's answers are the test's to decide.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as kafkajs from 'kafkajs';
import { fetchTopicOffsets } from '../../../shared/adapters/event-log/kafka-read.ts';

const RETRY = { initialRetryTime: 1, maxRetryTime: 5, retries: 3 };

/** kafkajs's protocol error as it throws it: a `type` naming the broker's answer. */
const brokerError = (type: string) => Object.assign(new Error(`broker answered ${type}`), { type });

/** An admin whose `fetchTopicOffsets` throws `failures` in turn, then answers; counts metadata refreshes. */
const fakeAdmin = (failures: Error[]) => {
  const calls: string[] = [];
  const admin = {
    fetchTopicOffsets: async () => {
      calls.push('offsets');
      const failure = failures.shift();
      if (failure !== undefined) throw failure;
      return [{ partition: 0, offset: '3', high: '3', low: '0' }];
    },
    listGroups: async () => {
      calls.push('refresh');
      return { groups: [] };
    },
  } as unknown as kafkajs.Admin;
  return { admin, calls };
};

test('a partition whose leader moved is asked again after the metadata is re-read', async () => {
  const { admin, calls } = fakeAdmin([brokerError('NOT_LEADER_FOR_PARTITION'), brokerError('LEADER_NOT_AVAILABLE')]);
  const offsets = await fetchTopicOffsets(admin, 'calls.submitted.v1', RETRY);
  assert.deepEqual(offsets, [{ partition: 0, offset: '3', high: '3', low: '0' }]);
  assert.deepEqual(calls, ['offsets', 'refresh', 'offsets', 'refresh', 'offsets']);
});

test('a leader that stays away fails after the retries, with the broker’s answer', async () => {
  const { admin, calls } = fakeAdmin(Array.from({ length: 10 }, () => brokerError('NOT_LEADER_FOR_PARTITION')));
  await assert.rejects(fetchTopicOffsets(admin, 't', RETRY), { type: 'NOT_LEADER_FOR_PARTITION' });
  assert.equal(calls.filter((c) => c === 'offsets').length, 1 + RETRY.retries);
});

test('any other failure is passed on at once', async () => {
  const { admin, calls } = fakeAdmin([brokerError('TOPIC_AUTHORIZATION_FAILED')]);
  await assert.rejects(fetchTopicOffsets(admin, 't', RETRY), { type: 'TOPIC_AUTHORIZATION_FAILED' });
  assert.deepEqual(calls, ['offsets']);
});
