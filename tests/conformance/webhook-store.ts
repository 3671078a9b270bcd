/**
 * One conformance suite for the WebhookStore port (webhook-store.ts), run against every adapter:
 * the fold of webhook events, the outbox written with the checkpoint, claims (order per webhook
 * and subject, the per-team bound less what is in flight, leases), attempt outcomes, a delivery
 * postponed or failed unsent, listing and redelivery.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { WebhookEvent } from '../../shared/domain/webhook/webhook-events.ts';
import type { RecordedEvent } from '../../shared/ports/event-store.ts';
import { InvalidQueryError } from '../../shared/ports/read-models.ts';
import type { WebhookNotification, WebhookStore } from '../../shared/ports/webhook-store.ts';

export interface WebhookStoreFactory {
  fresh(): Promise<{ store: WebhookStore; cleanup: () => Promise<void> }>;
}

const secret = (n: number) => `whsec_${Buffer.alloc(32, n).toString('base64')}`;
const AT = '2026-11-25T10:00:00.000Z';

/** A feed written by hand: positions increase with every event or notification added. */
class Feed {
  position = 0n;
  events: RecordedEvent[] = [];
  notifications: WebhookNotification[] = [];

  webhook(webhookId: string, event: WebhookEvent): this {
    this.position++;
    this.events.push({
      id: `e${this.position}`,
      streamId: `webhook-${webhookId}`,
      revision: 0,
      position: this.position,
      type: event.type,
      data: event.data,
      metadata: {},
      recordedAt: new Date(AT),
    });
    return this;
  }

  register(webhookId: string, teamId: string, events: string[], n = 1): this {
    return this.webhook(webhookId, {
      type: 'WebhookRegistered',
      data: {
        webhookId,
        teamId,
        url: `https://hooks.example.com/${webhookId}`,
        events: events as never,
        secret: secret(n),
        at: AT,
      },
    });
  }

  notify(
    teamId: string,
    subject: string,
    type: WebhookNotification['type'] = 'call.completed',
    webhookId?: string,
  ): this {
    this.position++;
    this.events.push({
      id: `n${this.position}`,
      streamId: `call-${subject}`,
      revision: 0,
      position: this.position,
      type: 'CallCompleted',
      data: {},
      metadata: {},
      recordedAt: new Date(AT),
    });
    this.notifications.push({
      position: this.position,
      eventId: `event-${this.position}`,
      teamId,
      type,
      subject,
      body: JSON.stringify({ type, n: Number(this.position) }),
      ...(webhookId ? { webhookId } : {}),
    });
    return this;
  }

  async applyTo(store: WebhookStore, options?: { expectedCheckpoint?: bigint }): Promise<void> {
    await store.apply(this.events, this.notifications, this.position, options);
    this.events = [];
    this.notifications = [];
  }
}

export const webhookStoreConformance = (name: string, factory: WebhookStoreFactory, options: { skip?: string } = {}) =>
  describe(`WebhookStore conformance: ${name}`, { skip: options.skip }, () => {
    let store: WebhookStore;
    let cleanup: () => Promise<void>;
    before(async () => {
      ({ store, cleanup } = await factory.fresh());
    });
    after(async () => {
      await cleanup?.();
    });
    const claim = (
      now: Date,
      over: Partial<{ limit: number; perTeam: number; leaseMs: number; inFlight: Record<string, number> }> = {},
    ) => store.claim(now, { limit: 50, perTeam: 10, leaseMs: 60_000, inFlight: {}, ...over });
    let feed: Feed;

    test('a batch folds registrations and queues one delivery per subscribed webhook as they stood at that point; applying it again queues nothing', async () => {
      assert.equal(await store.anyWebhook(), false);
      assert.equal(await store.checkpoint(), 0n);
      feed = new Feed()
        .notify('t1', 'c0') // before any webhook: nobody to tell
        .register('w1', 't1', ['call.completed'])
        .register('w2', 't1', ['call.failed'])
        .register('w3', 't2', ['call.completed'])
        .notify('t1', 'c1');
      const [events, notifications] = [feed.events, feed.notifications];
      await feed.applyTo(store);
      assert.equal(await store.checkpoint(), feed.position);
      assert.equal(await store.anyWebhook(), true);
      await store.apply(events, notifications, feed.position);
      const w1 = await store.deliveries('w1', { limit: 10 });
      assert.deepEqual(
        w1.deliveries.map((d) => [d.eventId, d.type, d.status, d.attempts]),
        [['event-5', 'call.completed', 'pending', 0]],
      );
      assert.equal(
        (await store.deliveries('w2', { limit: 10 })).deliveries.length,
        0,
        'not subscribed to call.completed',
      );
      assert.equal((await store.deliveries('w3', { limit: 10 })).deliveries.length, 0, 'another team');
      assert.deepEqual(
        (await store.list('t1')).map((w) => [w.webhookId, w.status, w.events]),
        [
          ['w1', 'active', ['call.completed']],
          ['w2', 'active', ['call.failed']],
        ],
      );
      await assert.rejects(
        new Feed().applyTo(store, { expectedCheckpoint: 1n }),
        (error: unknown) => (error as { code?: string }).code === 'CHECKPOINT_MISMATCH',
      );
    });

    test('claims: one subject in order, the per-team bound less what is in flight, a lease held', async () => {
      const last = await store.checkpoint();
      feed.position = last;
      feed
        .register('w4', 't2', ['call.completed'])
        .notify('t1', 'c1')
        .notify('t1', 'c2')
        .notify('t1', 'c3')
        .notify('t2', 'c9');
      await feed.applyTo(store, { expectedCheckpoint: last });
      const now = new Date(Date.now() + 1000);
      assert.deepEqual(
        (await claim(now, { inFlight: { t1: 10, t2: 8 } })).map((c) => c.webhookId).sort(),
        ['w3', 'w4'],
        't1 has no room; t2 room for both of its',
      );
      const claimed = await claim(now, { perTeam: 3, inFlight: { t1: 2 } });
      assert.equal(claimed.length, 1, 't2 is leased; t1 gives one');
      const first = claimed[0]!;
      assert.deepEqual(
        [first.webhookId, first.eventId, first.url, first.secrets, first.attempts],
        ['w1', 'event-5', 'https://hooks.example.com/w1', [secret(1)], 0],
      );
      const more = await claim(now);
      assert.deepEqual(
        more.map((c) => c.eventId).sort(),
        [`event-${Number(last) + 3}`, `event-${Number(last) + 4}`],
        'c1 waits for its earlier delivery; c2 and c3 go',
      );
      // A retry later: the subject stays blocked until it is delivered or failed.
      await store.recordAttempt(
        first.deliveryId,
        {
          kind: 'retry',
          statusCode: 500,
          error: 'the receiver answered 500',
          nextAttemptAt: new Date(now.getTime() + 60_000),
        },
        now,
      );
      assert.deepEqual(await claim(now), [], 'the retry is not due, c1 waits behind it, the rest are leased');
      const later = new Date(now.getTime() + 61_000);
      const retried = await claim(later);
      assert.ok(
        retried.some((c) => c.deliveryId === first.deliveryId && c.attempts === 1),
        'due again after its pause',
      );
      await store.recordAttempt(first.deliveryId, { kind: 'delivered', statusCode: 204 }, later);
      const [view] = (await store.deliveries('w1', { limit: 100, status: 'delivered' })).deliveries;
      assert.deepEqual(
        [
          view?.deliveryId,
          view?.attempts,
          view?.lastStatusCode,
          view?.lastError,
          view?.nextAttemptAt,
          view?.deliveredAt,
        ],
        [first.deliveryId, 2, 204, null, null, later.toISOString()],
      );
      const afterLease = await claim(new Date(later.getTime() + 120_000));
      assert.ok(
        afterLease.some((c) => c.webhookId === 'w1' && c.eventId === `event-${Number(last) + 2}`),
        'the next of subject c1 once the first is delivered',
      );
      for (const c of afterLease)
        await store.recordAttempt(
          c.deliveryId,
          { kind: 'retry', statusCode: null, error: 'no answer within 10 s', nextAttemptAt: null },
          later,
        );
      assert.ok(
        (await store.deliveries('w1', { limit: 100, status: 'failed' })).deliveries.every(
          (d) => d.lastError === 'no answer within 10 s' && d.nextAttemptAt === null,
        ),
      );
    });

    test('rotation signs with both secrets until the overlap ends; disabled and deleted webhooks get nothing; listing pages; redelivery', async () => {
      const last = await store.checkpoint();
      feed.position = last;
      const future = new Date(Date.now() + 3_600_000).toISOString();
      feed
        .register('r1', 't3', ['call.completed'], 7)
        .webhook('r1', {
          type: 'WebhookSecretRotated',
          data: { secret: secret(8), previousSecret: secret(7), previousValidUntil: future, at: AT },
        })
        .notify('t3', 'x1')
        .register('g1', 't3', ['call.failed'])
        .webhook('g1', { type: 'WebhookDisabled', data: { reason: 'gone', at: AT } })
        .notify('t3', 'x2', 'call.failed')
        .notify('t3', 'x3', 'webhook.test', 'r1');
      await feed.applyTo(store);
      const now = new Date(Date.now() + 5 * 60_000);
      const claimed = await claim(now, { inFlight: { t1: 10, t2: 10 } });
      assert.deepEqual(
        claimed.map((c) => [c.webhookId, c.secrets]),
        [
          ['r1', [secret(8), secret(7)]],
          ['r1', [secret(8), secret(7)]],
        ],
      );
      assert.equal(
        (await store.deliveries('g1', { limit: 10 })).deliveries.length,
        0,
        'a disabled webhook is not queued to',
      );
      assert.equal((await store.get('g1'))?.status, 'disabled');
      assert.equal(
        (await claim(new Date(Date.parse(future) + 120_000), { inFlight: { t1: 10, t2: 10 } }))[0]?.secrets.length,
        1,
        'after the overlap, the new secret alone',
      );

      const page1 = await store.deliveries('r1', { limit: 1 });
      assert.equal(page1.deliveries[0]?.type, 'webhook.test', 'newest first');
      const page2 = await store.deliveries('r1', { limit: 1, cursor: page1.nextCursor! });
      assert.equal(page2.deliveries[0]?.type, 'call.completed');
      assert.equal(page2.nextCursor, null);
      await assert.rejects(store.deliveries('r1', { limit: 1, cursor: 'bogus' }), InvalidQueryError);
      // 19 digits past a 64-bit sequence number: no cursor this API issued (PostgreSQL answered 500).
      const tooFar = Buffer.from('d:9999999999999999999').toString('base64url');
      await assert.rejects(store.deliveries('r1', { limit: 1, cursor: tooFar }), InvalidQueryError);

      await store.recordAttempt(page2.deliveries[0].deliveryId, { kind: 'gone', statusCode: 410, error: 'gone' }, now);
      assert.equal((await store.deliveries('r1', { limit: 10, status: 'failed' })).deliveries.length, 1);
      assert.equal(await store.redeliver('r1', page2.deliveries[0].deliveryId, now), true);
      const [again] = (await store.deliveries('r1', { limit: 10, status: 'pending' })).deliveries.filter(
        (d) => d.type === 'call.completed',
      );
      assert.deepEqual([again?.attempts, again?.nextAttemptAt], [0, now.toISOString()]);
      assert.equal(
        await store.redeliver('g1', page2.deliveries[0].deliveryId, now),
        false,
        "another webhook's delivery",
      );

      feed.webhook('r1', { type: 'WebhookDeleted', data: { at: AT } });
      await feed.applyTo(store);
      assert.equal(await store.get('r1'), undefined);
      assert.deepEqual(
        (await store.list('t3')).map((w) => w.webhookId),
        ['g1'],
      );
      assert.equal(
        (await claim(new Date(Date.parse(future) + 600_000), { inFlight: { t1: 10, t2: 10 } })).length,
        0,
        'nothing is sent to a deleted webhook',
      );
    });

    test('a webhook disabled (410) or deleted with deliveries pending: they end failed, saying why, not pending for ever', async () => {
      feed.position = await store.checkpoint();
      feed
        .register('d1', 't6', ['call.completed'])
        .register('d2', 't6', ['call.completed'])
        .notify('t6', 'v1')
        .notify('t6', 'v2')
        .webhook('d1', { type: 'WebhookDisabled', data: { reason: 'the receiver answered 410 Gone', at: AT } })
        .webhook('d2', { type: 'WebhookDeleted', data: { at: AT } });
      await feed.applyTo(store);
      const listed = await store.deliveries('d1', { limit: 10 });
      assert.deepEqual(
        listed.deliveries.map((d) => [d.status, d.lastError, d.nextAttemptAt]),
        [
          ['failed', 'not sent: the webhook was disabled (the receiver answered 410 Gone)', null],
          ['failed', 'not sent: the webhook was disabled (the receiver answered 410 Gone)', null],
        ],
      );
      assert.deepEqual((await store.deliveries('d1', { limit: 10, status: 'pending' })).deliveries, []);
      assert.deepEqual(
        (await store.deliveries('d2', { limit: 10 })).deliveries.map((d) => [d.status, d.lastError]),
        [
          ['failed', 'not sent: the webhook was deleted'],
          ['failed', 'not sent: the webhook was deleted'],
        ],
      );
    });

    test('failed unsent: no attempt counted, its reason listed, the next of its subject claimable; redelivery queues it again', async () => {
      const last = await store.checkpoint();
      feed.position = last;
      feed
        .register('u1', 't4', ['deal.outcome.updated', 'call.completed'])
        .notify('t4', 'y1', 'deal.outcome.updated')
        .notify('t4', 'y1');
      await feed.applyTo(store);
      const now = new Date(Date.now() + 2 * 3_600_000);
      const others = { inFlight: { t1: 10, t2: 10, t3: 10 } };
      const [first, ...rest] = await claim(now, others);
      assert.deepEqual([first?.type, rest.length], ['deal.outcome.updated', 0], 'the next of y1 waits behind it');
      const reason = 'not sent: its deal record is never written';
      await store.failUnsent(first!.deliveryId, reason);
      const [failed] = (await store.deliveries('u1', { limit: 10, status: 'failed' })).deliveries;
      assert.deepEqual(
        [failed?.deliveryId, failed?.attempts, failed?.lastStatusCode, failed?.lastError, failed?.nextAttemptAt],
        [first!.deliveryId, 0, null, reason, null],
      );
      const [next] = await claim(now, others);
      assert.equal(next?.type, 'call.completed', 'no longer held behind it');
      await store.recordAttempt(next.deliveryId, { kind: 'delivered', statusCode: 200 }, now);
      await store.failUnsent(next.deliveryId, reason);
      assert.equal(
        (await store.deliveries('u1', { limit: 10, status: 'delivered' })).deliveries[0]?.deliveryId,
        next.deliveryId,
        'only a pending delivery is failed',
      );
      assert.equal(await store.redeliver('u1', first!.deliveryId, now), true);
      const [again] = (await store.deliveries('u1', { limit: 10, status: 'pending' })).deliveries;
      assert.deepEqual([again?.deliveryId, again?.attempts], [first!.deliveryId, 0]);
    });

    test("an erasure while its call's delivery is being sent: call.erased waits for that delivery's lease, then goes", async () => {
      feed.position = await store.checkpoint();
      feed.register('x1', 't8', ['call.completed', 'call.erased']).notify('t8', 'gone', 'call.completed');
      await feed.applyTo(store);
      const others = { inFlight: { t1: 10, t2: 10, t3: 10, t4: 10, t5: 10 } };
      const now = Date.now();
      const [sending] = await claim(new Date(now), { ...others, leaseMs: 30_000 });
      assert.equal(sending?.type, 'call.completed');
      // The projection applies CallErased while that attempt is in flight: the delivery goes (its
      // body holds the personal data), and the notice is queued.
      feed.notify('t8', 'gone', 'call.erased');
      await feed.applyTo(store);
      assert.deepEqual(
        (await store.deliveries('x1', { limit: 10 })).deliveries.map((d) => d.type),
        ['call.erased'],
      );
      assert.deepEqual(
        await claim(new Date(now + 1_000), others),
        [],
        'not while the removed delivery may still be on its way to the receiver',
      );
      const [notice] = await claim(new Date(now + 30_001), others);
      assert.equal(notice?.type, 'call.erased', 'once its lease has ended');
      await store.recordAttempt(notice.deliveryId, { kind: 'delivered', statusCode: 200 }, new Date(now + 30_001));
    });

    test('postponed: due again at its time with no attempt counted; a note is kept as its last error', async () => {
      feed.position = await store.checkpoint();
      feed.register('p1', 't5', ['deal.outcome.updated']).notify('t5', 'z1', 'deal.outcome.updated');
      await feed.applyTo(store);
      const now = new Date(Date.now() + 3 * 3_600_000);
      const others = { inFlight: { t1: 10, t2: 10, t3: 10, t4: 10 } };
      const [claimed] = await claim(now, others);
      assert.equal(claimed?.webhookId, 'p1');
      const until = new Date(now.getTime() + 250);
      await store.postpone(claimed.deliveryId, until);
      assert.deepEqual(await claim(now, others), [], 'not due before its time');
      const [again] = await claim(until, others);
      assert.deepEqual([again?.deliveryId, again?.attempts], [claimed.deliveryId, 0]);
      const note = 'waiting for its deal record';
      await store.postpone(claimed.deliveryId, until, note);
      await store.postpone(claimed.deliveryId, until);
      const [view] = (await store.deliveries('p1', { limit: 10 })).deliveries;
      assert.deepEqual(
        [view?.status, view?.attempts, view?.lastError, view?.nextAttemptAt],
        ['pending', 0, note, until.toISOString()],
        'a postponement without a note keeps the last one',
      );
    });
  });
