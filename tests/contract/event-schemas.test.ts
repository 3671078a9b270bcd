/**
 * The JSON Schemas served at /docs/events/ describe the messages downstream systems really get
 * (docs/decisions/0014-erasure-crypto-shredding.md), checked as a consumer would check them: with
 * Ajv (JSON Schema 2020-12, formats on) against the documents the service serves. Real calls go
 * through the pipeline with personal fields sealed, as the service runs — one with a deal and a
 * transcript, erased afterwards, and one failed and retried by an operator — and every message they
 * put on deals.outcome-updated.v1 and calls.events.v1 that has a served schema matches
 * `/docs/events/{type}.json`; the same payloads with their personal fields open (the
 * deal.outcome.updated webhook's data, the events as the service reads them) match
 * `/docs/events/{type}.opened.json`. On the embedded default and on Kafka + PostgreSQL.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import { CLOUD_EVENT_TYPES, isCallEventType } from '../../shared/domain/call/call-event-types.ts';
import { EVENT_SCHEMAS } from '../../shared/domain/call/event-schemas.ts';
import type { LogRecord } from '../../shared/ports/event-log.ts';
import type { RecordedEvent } from '../../shared/ports/event-store.ts';
import { type EmbeddedPipeline, openEmbeddedPipeline } from '../support/embedded-pipeline.ts';
import { eventually } from '../support/eventually.ts';
import type { PipelineHarness, PipelineOptions } from '../support/pipeline-harness.ts';
import { openServersPipeline, serversSkip } from '../support/servers-pipeline.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

const TRANSCRIPT =
  'Rep: Hi Dana, what do you use today?\nDana: Spreadsheets, and pricing worries me.\nRep: Shall we start a pilot on Friday?';

/** The message types with a served schema whose payload holds personal fields: sealed on the topics. */
const SEALED_TYPES = ['deal.outcome.updated', 'call.transcript.recorded', 'call.retried'];

const schemasContract = (
  name: string,
  openPipeline: (options: PipelineOptions) => Promise<EmbeddedPipeline>,
  skip?: string,
) =>
  describe(`served event schemas against real messages: ${name}`, { skip }, () => {
    let pipeline: EmbeddedPipeline;
    let h: PipelineHarness;
    let receiver: WebhookReceiver;
    let missing: Server;
    before(async () => {
      pipeline = await openPipeline({ erasure: true, webhookDelivery: { retryScheduleMs: [100, 200] } });
      h = pipeline.h;
      receiver = await startWebhookReceiver();
      // A recording host that has nothing: an audio call fails audio_not_found, which a retry may change.
      missing = createServer((_request, response) => response.writeHead(404).end());
      await new Promise<void>((resolve) => missing.listen(0, '127.0.0.1', resolve));
    });
    after(async () => {
      missing?.closeAllConnections();
      await new Promise<void>((resolve) => (missing ? missing.close(() => resolve()) : resolve()));
      await receiver?.close();
      await pipeline?.close();
    });

    const ajv = new Ajv2020({ allErrors: true });
    // A CommonJS module: its default import is module.exports, whose `default` is the plugin.
    ajvFormats.default(ajv);
    const validators = new Map<string, ValidateFunction | undefined>();
    /** The validator of the document served at /docs/events/{name}.json; undefined when none is. */
    const served = async (schemaName: string): Promise<ValidateFunction | undefined> => {
      if (validators.has(schemaName)) return validators.get(schemaName);
      const res = await h.ingress.app.inject({ method: 'GET', url: `/docs/events/${schemaName}.json` });
      const validate = res.statusCode === 200 ? ajv.compile(res.json<object>()) : undefined;
      if (validate) assert.match(String(res.headers['content-type']), /^application\/schema\+json/);
      validators.set(schemaName, validate);
      return validate;
    };
    /** The documents checked, and why each payload that does not match fails, reported all at once. */
    const checked: string[] = [];
    const mismatches: string[] = [];
    const check = async (schemaName: string, data: unknown, what: string) => {
      const validate = await served(schemaName);
      checked.push(schemaName);
      if (!validate) mismatches.push(`${what}: no document at /docs/events/${schemaName}.json`);
      else if (!validate(data))
        mismatches.push(
          `${what} does not match /docs/events/${schemaName}.json: ${JSON.stringify(validate.errors)} in ${JSON.stringify(data)}`,
        );
    };
    const submit = async (key: string, body: Record<string, unknown>) => {
      const accepted = await h.ingest({ key, body });
      assert.equal(accepted.statusCode, 201, accepted.body);
      return accepted.json<{ callId: string }>().callId;
    };
    const countOf = (type: string) => (events: RecordedEvent[]) => events.filter((e) => e.type === type).length;
    const onTopic = async (topic: string, callIds: string[]): Promise<LogRecord[]> =>
      (await h.eventLog.read(topic, { limit: 10_000 })).filter((r) => callIds.includes(r.key));

    test('every message of a call with a deal, a retried call and an erased call matches /docs/events/{type}.json, its personal fields in sealed; the payloads with them open match {type}.opened.json', async () => {
      const team = await h.team({ ownerEmail: 'olive@acme.test', ownerName: 'Olive Owner' });
      await h.admin('POST', `/api/admin/teams/${team.teamId}/members`, { email: 'sam@acme.test', name: 'Sam Seller' });
      const webhook = await h.admin('POST', `/api/admin/teams/${team.teamId}/webhooks`, {
        url: receiver.url('/deals'),
        events: ['deal.outcome.updated'],
      });
      assert.equal(webhook.statusCode, 201, webhook.body);
      // Events recorded before the webhook projection applies the registration are not sent to it.
      await eventually(async () => {
        const listed = (await h.admin('GET', `/api/admin/teams/${team.teamId}/webhooks`)).json<{
          webhooks: unknown[];
        }>();
        assert.equal(listed.webhooks.length, 1);
      });

      const dealCall = await submit(team.key, {
        transcript: TRANSCRIPT,
        repName: 'Sam Seller',
        repEmail: 'sam@acme.test',
        notes: 'Budget approved in Q3',
        deal: { dealSize: 1200.5, revenueCollected: 300, dealDate: '2026-01-15', notes: 'Pilot for ten seats' },
      });
      const retriedCall = await submit(team.key, {
        audioUrl: `http://127.0.0.1:${(missing.address() as AddressInfo).port}/recording.wav`,
        repName: 'Sam Seller',
      });
      const dealEvents = await h.callEvents(dealCall);
      assert.equal(dealEvents.at(-1)!.type, 'CallCompleted');
      await h.callEvents(retriedCall, (events) => events.at(-1)?.type === 'CallFailed');
      const retry = await h.admin('POST', `/api/admin/calls/${retriedCall}/retry`);
      assert.equal(retry.statusCode, 202, retry.body);
      // The recording is still missing: the retried call fails again.
      const retriedEvents = await h.callEvents(retriedCall, (events) => countOf('CallFailed')(events) === 2);

      // The payloads with their personal fields open: the events as the service reads them (opened
      // from the store, as they were relayed) and the deal.outcome.updated webhook's data.
      for (const event of [...dealEvents, ...retriedEvents]) {
        if (!isCallEventType(event.type)) continue;
        const type = CLOUD_EVENT_TYPES[event.type];
        if (SEALED_TYPES.includes(type)) await check(`${type}.opened`, event.data, `${event.type} as read`);
      }
      const [delivered] = await receiver.waitFor(1, (r) => r.path === '/deals', 20_000);
      assert.equal(delivered!.json.type, 'deal.outcome.updated');
      assert.equal(delivered!.json.data.repEmail, 'sam@acme.test', 'the webhook carries the personal fields open');
      await check('deal.outcome.updated.opened', delivered!.json.data, "the deal.outcome.updated webhook's data");

      // The deal message is published before the call is erased (an erasure drops an unpublished one).
      await eventually(async () => assert.equal((await onTopic(h.topics.dealOutcomeUpdated, [dealCall])).length, 1), {
        timeoutMs: 20_000,
        intervalMs: 50,
      });
      const erased = await h.ingress.app.inject({
        method: 'DELETE',
        url: `/api/calls/${dealCall}`,
        headers: { 'x-api-key': team.key },
      });
      assert.equal(erased.statusCode, 202, erased.body);

      const messages = await eventually(
        async () => {
          const records = [
            ...(await onTopic(h.topics.dealOutcomeUpdated, [dealCall])),
            ...(await onTopic(h.topics.callEvents, [dealCall, retriedCall])),
          ];
          const types = new Set(records.map((r) => r.headers.ce_type));
          for (const type of [...SEALED_TYPES, 'call.erased']) assert.ok(types.has(type), `no ${type} yet`);
          return records;
        },
        { timeoutMs: 20_000, intervalMs: 50 },
      );

      for (const record of messages) {
        const type = record.headers.ce_type!;
        const value = JSON.parse(record.value) as Record<string, unknown>;
        if (SEALED_TYPES.includes(type)) {
          assert.match(String(value.sealed), /^v1\./, `${type} on the topic carries its personal fields sealed`);
          for (const secret of ['sam@acme.test', 'Sam Seller', 'Pilot for ten seats', 'Spreadsheets'])
            assert.ok(!record.value.includes(secret), `${type} on the topic holds ${secret} in clear`);
        }
        // Only some types have a served schema; the others are not checked here.
        if (!Object.hasOwn(EVENT_SCHEMAS, type)) continue;
        await check(type, value, `${type} on the topic (partition ${record.partition}, offset ${record.offset})`);
      }
      assert.deepEqual(mismatches, []);
      assert.deepEqual(
        [...new Set(checked)].sort(),
        Object.keys(EVENT_SCHEMAS).sort(),
        'every served schema was checked against a real payload',
      );
    });
  });

void schemasContract('embedded default (SQLite)', (options) => openEmbeddedPipeline({}, options));
void schemasContract('Kafka + PostgreSQL', (options) => openServersPipeline({}, options), serversSkip);
