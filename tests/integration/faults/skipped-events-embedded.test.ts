/**
 * An event an operator skipped stays skipped in everything a projection does (embedded backends):
 * - the webhook projection folds a call's earlier events without it, so a later event of the same
 *   call is still delivered and the projection keeps going;
 * - a replay of call history leaves it out as the live projection does, so the rebuild completes.
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
import { SKIPPABLE, skipEvent } from '../../../services/projections/skipped-events.ts';
import { Health } from '../../../services/runtime/health.ts';
import { appendCall, at, events, submittedData } from '../../conformance/read-models-fixtures.ts';
import { openEmbeddedBackends } from '../../support/embedded-backends.ts';
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
