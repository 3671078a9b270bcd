/**
 * A claimed webhook delivery is sent only while its attempt can end within its lease: checks that
 * took longer than the lease leaves them (a database answering slowly) are not followed by a send,
 * since once the lease lapses another claim may send the same delivery at the same time. Over a
 * fake outbox, so the timing is the test's to decide.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pino } from 'pino';
import { WebhookDeliveryWorker } from '../../../services/projections/webhook-delivery.ts';
import type { EventStore } from '../../../shared/ports/event-store.ts';
import type { ClaimedDelivery, WebhookStore } from '../../../shared/ports/webhook-store.ts';
import { eventually } from '../../support/eventually.ts';

const delivery = {
  deliveryId: 'd1',
  webhookId: 'w1',
  teamId: 't1',
  eventId: 'e1',
  type: 'call.completed',
  subject: 'call-1',
  url: 'https://hooks.example.com/w1',
  secrets: [`whsec_${Buffer.alloc(32, 1).toString('base64')}`],
  body: '{}',
  attempts: 0,
} as unknown as ClaimedDelivery;

const run = async (checkMs: number) => {
  let claimed = false;
  const sent: string[] = [];
  const lines: { msg: string }[] = [];
  const store = {
    nextDue: async () => (claimed ? undefined : new Date(0)),
    claim: async () => {
      if (claimed) return [];
      claimed = true;
      return [delivery];
    },
    recordAttempt: async () => undefined,
  } as unknown as WebhookStore;
  const worker = new WebhookDeliveryWorker(
    store,
    {} as EventStore,
    pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) }),
    {
      timeoutMs: 1_000,
      leaseMarginMs: 100,
      send: async (url) => {
        sent.push(url);
        return { statusCode: 200, body: '' };
      },
    },
    { erased: () => new Promise((resolve) => setTimeout(() => resolve(false), checkMs)) },
  );
  worker.start();
  await eventually(() => assert.ok(claimed));
  await new Promise((resolve) => setTimeout(resolve, checkMs + 200));
  await worker.stop();
  return { sent, lines };
};

test('checks within the lease: the delivery is sent', async () => {
  const { sent } = await run(10);
  assert.deepEqual(sent, [delivery.url]);
});

test('checks that outlast what the lease leaves them: not sent, and said so; it is claimed again later', async () => {
  const { sent, lines } = await run(300);
  assert.deepEqual(sent, []);
  assert.ok(lines.some((l) => /checked too slowly to be sent within its lease/.test(l.msg)));
});
