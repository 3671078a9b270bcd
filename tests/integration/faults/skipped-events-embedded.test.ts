/**
 * An event an operator skipped stays skipped in everything a projection does (embedded backends):
 * - the webhook projection folds a call's earlier events without it, so a later event of the same
 *   call is still delivered and the projection keeps going;
 * - a replay of call history leaves it out as the live projection does, so the rebuild completes;
 * - the admin API skips only the event a projection is recorded as stopped on (409 naming
 *   `position` otherwise), in a process that does not run it and across a restart;
 * - so it does the event a projection is recorded as stuck on (it keeps failing there with an
 *   error that proves nothing against it), which every process reports as `stuck` until the
 *   projection goes past it.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { callEvents } from '../../../shared/domain/call/call-catalogue.ts';
import { webhookEvents } from '../../../shared/domain/webhook/webhook-catalogue.ts';
import { TOPICS } from '../../../shared/topics.ts';
import { startProjections } from '../../../services/projections/projections.ts';
import { replayProjection } from '../../../services/projections/replay.ts';
import { PROJECTION_STATUS_STREAM, recordStuck } from '../../../services/projections/projection-status.ts';
import { UnexplainedEventError } from '../../../services/projections/supervised.ts';
import { SKIPPABLE, SKIPPED_EVENTS_STREAM, skipEvent } from '../../../services/projections/skipped-events.ts';
import { Health } from '../../../services/runtime/health.ts';
import { appendCall, at, events, submittedData } from '../../conformance/read-models-fixtures.ts';
import { openEmbeddedBackends } from '../../support/embedded-backends.ts';
import { createHarness } from '../../support/ingress-harness.ts';
import { eventually } from '../../support/eventually.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.ts';

type Backends = ReturnType<typeof openEmbeddedBackends>;

describe('a skipped event stays skipped: embedded (SQLite)', () => {
  const opened: Backends[] = [];
  let receiver: WebhookReceiver;
  const open = () => {
    const backends = openEmbeddedBackends();
    opened.push(backends);
    return backends;
  };
  /** Appends a call's CallSubmitted and then a ProcessingStarted that does not decode; returns the bad one. */
  const callWithBadEvent = async (b: Backends, teamId: string) => {
    const call = submittedData({ teamId });
    const streamId = callEvents.streamId(call.callId);
    await b.eventStore.append(streamId, [
      callEvents.encode(events.submitted(call)),
      { type: 'ProcessingStarted', data: { nonsense: true } },
    ]);
    const bad = (await b.eventStore.readStream(streamId))[1]!;
    return { call, bad };
  };

  before(async () => {
    receiver = await startWebhookReceiver();
  });
  after(async () => {
    await receiver?.close();
    for (const b of opened) await b.cleanup();
  });

  test('webhooks: a call event after one the operator skipped is delivered, and the projection keeps going', async () => {
    const b = open();
    const teamId = `team-${randomUUID()}`;
    const webhookId = randomUUID();
    await b.eventStore.append(webhookEvents.streamId(webhookId), [
      webhookEvents.encode({
        type: 'WebhookRegistered',
        data: {
          webhookId,
          teamId,
          url: receiver.url(`/${webhookId}`),
          events: ['call.failed'],
          secret: `whsec_${Buffer.alloc(32, 7).toString('base64')}`,
          at: at(0),
        },
      }),
    ]);
    const health = new Health();
    const projections = startProjections({
      eventStore: b.eventStore,
      eventLog: b.eventLog,
      readModels: b.readModels,
      topics: TOPICS,
      logger: pino({ level: 'silent' }),
      relayCallEvents: false,
      health,
      webhookDelivery: { allowPrivate: true },
    });
    try {
      const { call, bad } = await callWithBadEvent(b, teamId);
      // Deal records never decode a ProcessingStarted; the other two stop on it.
      await eventually(
        () => {
          for (const projection of ['call-history', 'webhooks']) {
            const report = health.report().components[`projection:${projection}`];
            assert.equal(report?.ready, false, `${projection}: ${JSON.stringify(report)}`);
            assert.match(String(report.reason), new RegExp(`position ${bad.position} `));
          }
        },
        { timeoutMs: 20_000, intervalMs: 50 },
      );
      for (const projection of SKIPPABLE)
        await skipEvent(b.eventStore, {
          projection,
          position: bad.position.toString(),
          reason: 'malformed test event',
        });
      await appendCall(b.eventStore, call.callId, [events.failed('TRANSCRIPTION_FAILED', 'no speech', 6)]);

      const [delivered] = await receiver.waitFor(
        1,
        (r) => r.path === `/${webhookId}` && r.json.type === 'call.failed',
        20_000,
      );
      assert.equal(delivered!.json.data.callId, call.callId);
      assert.equal(delivered!.json.data.status, 'failed');
      await eventually(() => assert.equal(health.report().ready, true, JSON.stringify(health.report())), {
        timeoutMs: 20_000,
        intervalMs: 50,
      });
      assert.equal((await b.readModels.callHistory.get(teamId, call.callId))?.status, 'failed');
    } finally {
      await projections.stop();
    }
  });

  test('the admin skip takes only the event a projection is recorded as stopped on, also while its process is down and after it started again', async () => {
    const b = open();
    const teamId = `team-${randomUUID()}`;
    const startHere = (health: Health) =>
      startProjections({
        eventStore: b.eventStore,
        eventLog: b.eventLog,
        readModels: b.readModels,
        topics: TOPICS,
        logger: pino({ level: 'silent' }),
        relayCallEvents: false,
        health,
      });
    const { call, bad } = await callWithBadEvent(b, teamId);
    const good = (await b.eventStore.readStream(callEvents.streamId(call.callId)))[0]!;
    // An ingress of its own: it runs no projection, so it knows of a stop only from the store.
    const ingress = await createHarness({ eventStore: b.eventStore, eventLog: b.eventLog, readModels: b.readModels });
    const skip = (projection: string, position: bigint) =>
      ingress.admin('POST', `/api/admin/projections/${projection}/skip`, {
        position: position.toString(),
        reason: 'malformed test event',
      });
    let projections = startHere(new Health());
    try {
      // Call history stops on it (webhooks have no webhook to notify, deals never decode it).
      await eventually(
        async () => {
          const stops = (await b.eventStore.readStream(PROJECTION_STATUS_STREAM)).map(
            (e) => e.data as { projection: string; position: string },
          );
          assert.deepEqual(stops, [{ ...stops[0], projection: 'call-history', position: bad.position.toString() }]);
        },
        { timeoutMs: 20_000, intervalMs: 50 },
      );
      // The projections' process is down: the recorded stop still says where it stopped.
      await projections.stop();
      const refused = await skip('call-history', good.position);
      assert.equal(refused.statusCode, 409, refused.body);
      assert.deepEqual(refused.json().errors, [
        {
          field: 'position',
          message: `call-history is not stopped on position ${good.position}; it is stopped on position ${bad.position}`,
        },
      ]);
      const notStopped = await skip('deals', bad.position);
      assert.equal(notStopped.statusCode, 409, notStopped.body);
      assert.match(
        notStopped.json().detail,
        new RegExp(`^deals is not stopped on position ${bad.position}; it is not stopped or stuck on any event\\.`),
      );

      // Started again, it is stopped on the same event from the start, and the skip lets it go on.
      const health = new Health();
      projections = startHere(health);
      const skipped = await skip('call-history', bad.position);
      assert.equal(skipped.statusCode, 201, skipped.body);
      await eventually(() => assert.equal(health.report().ready, true, JSON.stringify(health.report())), {
        timeoutMs: 20_000,
        intervalMs: 50,
      });
      await appendCall(b.eventStore, call.callId, [events.failed('TRANSCRIPTION_FAILED', 'no speech', 6)]);
      await eventually(
        async () => assert.equal((await b.readModels.callHistory.get(teamId, call.callId))?.status, 'failed'),
        { timeoutMs: 20_000, intervalMs: 50 },
      );
      assert.deepEqual(
        (await b.eventStore.readStream(SKIPPED_EVENTS_STREAM))
          .map((e) => e.data as { projection: string })
          .map((d) => d.projection),
        ['call-history'],
        'a refused skip records nothing',
      );
    } finally {
      await projections.stop();
      await ingress.close();
    }
  });

  test('a recorded stuck event: every process reports the projection stuck on it, and the admin skip takes that event only', async () => {
    const b = open();
    const first = submittedData({ teamId: `team-${randomUUID()}` });
    const second = submittedData({ teamId: first.teamId });
    await appendCall(b.eventStore, first.callId, [events.submitted(first)]);
    await appendCall(b.eventStore, second.callId, [events.submitted(second)]);
    const [good] = await b.eventStore.readStream(callEvents.streamId(first.callId));
    const [stuckOn] = await b.eventStore.readStream(callEvents.streamId(second.callId));
    const bug = new UnexplainedEventError(
      'deals',
      stuckOn!,
      new TypeError("Cannot read properties of undefined (reading 'x')"),
    );
    await recordStuck(b.eventStore, bug, 5, new Date(Date.parse(at(0))));
    // An ingress of its own: it runs no projection, so it knows of the stuck event only from the store.
    const ingress = await createHarness({ eventStore: b.eventStore, eventLog: b.eventLog, readModels: b.readModels });
    try {
      const listing = await ingress.admin('GET', '/api/admin/projections');
      const deals = listing
        .json<{ projections: { name: string; state: string; stoppedOn?: object }[] }>()
        .projections.find((p) => p.name === 'deals');
      assert.equal(deals?.state, 'stuck', JSON.stringify(deals));
      const { at: recordedAt, ...on } = deals.stoppedOn as { at?: string };
      assert.deepEqual(on, {
        position: stuckOn!.position.toString(),
        streamId: stuckOn!.streamId,
        eventType: 'CallSubmitted',
        error: "TypeError: Cannot read properties of undefined (reading 'x')",
      });
      assert.ok(recordedAt, 'when it was recorded');
      const skip = (position: bigint) =>
        ingress.admin('POST', '/api/admin/projections/deals/skip', {
          position: position.toString(),
          reason: 'a bug in the deal projection',
        });
      const refused = await skip(good!.position);
      assert.equal(refused.statusCode, 409, refused.body);
      assert.deepEqual(refused.json().errors, [
        {
          field: 'position',
          message: `deals is not stuck on position ${good!.position}; it is stuck on position ${stuckOn!.position}`,
        },
      ]);
      const skipped = await skip(stuckOn!.position);
      assert.equal(skipped.statusCode, 201, skipped.body);

      // Once the projection is past it, it is stuck no more.
      await b.readModels.deals.apply([], stuckOn!.position, {
        expectedCheckpoint: await b.readModels.deals.checkpoint(),
      });
      const later = await ingress.admin('GET', '/api/admin/projections');
      const after = later
        .json<{ projections: { name: string; state: string; stoppedOn?: object }[] }>()
        .projections.find((p) => p.name === 'deals');
      assert.equal(after?.state, 'unknown', JSON.stringify(after));
      assert.equal(after.stoppedOn, undefined);
    } finally {
      await ingress.close();
    }
  });

  test('replay: call history is rebuilt past an event the operator skipped, and serves the calls after it', async () => {
    const b = open();
    const teamId = `team-${randomUUID()}`;
    const badSubmission = callEvents.streamId(randomUUID());
    await b.eventStore.append(badSubmission, [{ type: 'CallSubmitted', data: { nonsense: true } }]);
    const { call, bad } = await callWithBadEvent(b, teamId);
    const later = submittedData({ teamId });
    await appendCall(b.eventStore, later.callId, [events.submitted(later), events.completed(6)]);
    for (const event of [(await b.eventStore.readStream(badSubmission))[0]!, bad])
      await skipEvent(b.eventStore, {
        projection: 'call-history',
        position: event.position.toString(),
        reason: 'malformed test event',
      });
    const version = await b.readModels.callHistory.activeVersion();

    const phases: string[] = [];
    for await (const progress of replayProjection('call-history', b)) phases.push(progress.phase);
    assert.equal(phases.at(-1), 'done');
    assert.ok((await b.readModels.callHistory.activeVersion()) > version, 'reads switched to the rebuilt version');
    assert.equal((await b.readModels.callHistory.get(teamId, call.callId))?.status, 'pending');
    assert.equal((await b.readModels.callHistory.get(teamId, later.callId))?.status, 'completed');
  });
});
