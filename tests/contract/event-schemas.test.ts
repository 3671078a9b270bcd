/**
 * The JSON Schemas the service serves describe what downstream systems really get
 * (docs/decisions/0024-every-published-message-has-a-schema.md), checked as a consumer would check
 * them: it reads /docs/events/index.json, and validates with Ajv (JSON Schema 2020-12, formats on)
 * against the documents the index points to. Real calls go through the pipeline with personal
 * fields sealed, as the service runs — one with a deal and every optional field, erased afterwards,
 * and an audio call that fails, is retried by an operator and completes — and then:
 * - every message of theirs on every topic has a `ce_type` the index lists for that topic, and
 *   matches its document (`/docs/events/{type}.json`, its personal fields in `sealed`), with the
 *   headers the index says; a type published without one fails the test;
 * - every type the index lists for a topic was seen there, and every served document was checked
 *   against a real payload, so a document no message exercises cannot hide;
 * - the payloads with their personal fields open (the events as the service reads them) match
 *   `{type}.opened.json`, and every webhook body they caused (and a webhook.test) matches
 *   `/docs/webhooks/{type}.json`;
 * - a record of calls.submitted.v1 the processor cannot read reaches calls.dead-letter.v1 as
 *   received, with the dlq_* headers the index lists.
 * On the embedded default and on Kafka + PostgreSQL.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import { CLOUD_EVENT_TYPES, isCallEventType } from '../../shared/domain/call/call-event-types.ts';
import type { SchemaIndex } from '../../shared/domain/schema-index.ts';
import type { Transcriber } from '../../shared/ports/transcriber.ts';
import type { LogRecord } from '../../shared/ports/event-log.ts';
import type { RecordedEvent } from '../../shared/ports/event-store.ts';
import { type EmbeddedPipeline, openEmbeddedPipeline } from '../support/embedded-pipeline.ts';
import { eventually } from '../support/eventually.ts';
import type { PipelineHarness, PipelineOptions, StepOverrides } from '../support/pipeline-harness.ts';
import { openServersPipeline, serversSkip } from '../support/servers-pipeline.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

const TRANSCRIPT =
  'Rep: Hi Dana, what do you use today?\nDana: Spreadsheets, and pricing worries me.\nRep: Shall we start a pilot on Friday?';

/** Heard in every recording: the audio call's transcript, with no engine to install. */
const fixedTranscriber: Transcriber = {
  describe: () => 'fixed',
  available: async () => ({ ok: true }),
  transcribe: async () => ({
    text: 'Rep: Hello Dana.\nDana: Hello, tell me about the Recording Offer.',
    durationSeconds: 42,
    engine: 'fixed',
    segments: [
      { start: 0, end: 1.5, speaker: 'Rep', text: 'Hello Dana.' },
      { start: 1.5, end: 4, speaker: 'Dana', text: 'Hello, tell me about the Recording Offer.' },
    ],
  }),
};

/** Strings of the calls' personal fields: none may be on a topic in clear. */
const SECRETS = ['sam@acme.test', 'Sam Seller', 'Pilot for ten seats', 'Spreadsheets', 'Budget approved', 'crm-4711'];

const schemasContract = (
  name: string,
  openPipeline: (overrides: StepOverrides, options: PipelineOptions) => Promise<EmbeddedPipeline>,
  skip?: string,
) =>
  describe(`served schemas against real messages and webhooks: ${name}`, { skip }, () => {
    let pipeline: EmbeddedPipeline;
    let h: PipelineHarness;
    let receiver: WebhookReceiver;
    let recordingHost: Server;
    /** The recording host answers 404 until it has one. */
    let recording: Buffer | undefined;
    before(async () => {
      pipeline = await openPipeline(
        { transcriber: fixedTranscriber },
        { erasure: true, webhookDelivery: { retryScheduleMs: [100, 200] } },
      );
      h = pipeline.h;
      receiver = await startWebhookReceiver();
      recordingHost = createServer((_request, response) => {
        if (!recording) return response.writeHead(404).end();
        response.writeHead(200, { 'content-type': 'audio/wav', 'content-length': recording.length }).end(recording);
      });
      await new Promise<void>((resolve) => recordingHost.listen(0, '127.0.0.1', resolve));
    });
    after(async () => {
      recordingHost?.closeAllConnections();
      await new Promise<void>((resolve) => (recordingHost ? recordingHost.close(() => resolve()) : resolve()));
      await receiver?.close();
      await pipeline?.close();
    });

    const ajv = new Ajv2020({ allErrors: true });
    // A CommonJS module: its default import is module.exports, whose `default` is the plugin.
    ajvFormats.default(ajv);
    const get = (url: string) => h.ingress.app.inject({ method: 'GET', url });
    const validators = new Map<string, ValidateFunction | undefined>();
    /** The validator of the document served at `url`; undefined when none is. */
    const served = async (url: string): Promise<ValidateFunction | undefined> => {
      if (validators.has(url)) return validators.get(url);
      const res = await get(url);
      const validate = res.statusCode === 200 ? ajv.compile(res.json<object>()) : undefined;
      if (validate) assert.match(String(res.headers['content-type']), /^application\/schema\+json/);
      validators.set(url, validate);
      return validate;
    };
    /** The documents checked, and every problem found, reported all at once. */
    const checked = new Set<string>();
    const problems: string[] = [];
    const check = async (url: string | null | undefined, data: unknown, what: string) => {
      if (!url) return void problems.push(`${what}: the index lists no schema for it`);
      const validate = await served(url);
      checked.add(url);
      if (!validate) problems.push(`${what}: no document at ${url}`);
      else if (!validate(data))
        problems.push(`${what} does not match ${url}: ${JSON.stringify(validate.errors)} in ${JSON.stringify(data)}`);
    };
    const submit = async (key: string, body: Record<string, unknown>) => {
      const accepted = await h.ingest({ key, body });
      assert.equal(accepted.statusCode, 201, accepted.body);
      return accepted.json<{ callId: string }>().callId;
    };
    const lastIs = (type: string) => (events: RecordedEvent[]) => events.at(-1)?.type === type;
    const onTopic = async (topic: string, keys: string[]): Promise<LogRecord[]> =>
      (await h.eventLog.read(topic, { limit: 10_000 })).filter((r) => keys.includes(r.key));

    test('every message on every topic, and every webhook body, matches the document the index lists for its type; every listed type and document is seen', async () => {
      const indexAnswer = await get('/docs/events/index.json');
      assert.equal(indexAnswer.statusCode, 200, indexAnswer.body);
      const index = indexAnswer.json<SchemaIndex>();
      const topicOf = (topic: string) => index.topics.find((t) => t.topic === topic);
      assert.deepEqual(
        index.topics.map((t) => t.topic).sort(),
        Object.values(h.topics).sort(),
        'the index names every topic, as this deployment names them',
      );

      const team = await h.team({ ownerEmail: 'olive@acme.test', ownerName: 'Olive Owner' });
      await h.admin('POST', `/api/admin/teams/${team.teamId}/members`, { email: 'sam@acme.test', name: 'Sam Seller' });
      const webhook = await h.admin('POST', `/api/admin/teams/${team.teamId}/webhooks`, {
        url: receiver.url('/hooks'),
        events: ['call.completed', 'call.failed', 'deal.outcome.updated', 'call.erased'],
      });
      assert.equal(webhook.statusCode, 201, webhook.body);
      const { webhookId } = webhook.json<{ webhookId: string }>();
      // Events recorded before the webhook projection applies the registration are not sent to it.
      await eventually(async () => {
        const listed = (await h.admin('GET', `/api/admin/teams/${team.teamId}/webhooks`)).json<{
          webhooks: unknown[];
        }>();
        assert.equal(listed.webhooks.length, 1);
      });
      assert.equal(
        (await h.admin('POST', `/api/admin/teams/${team.teamId}/webhooks/${webhookId}/test`)).statusCode,
        202,
      );

      // Every optional field of a submission, an unknown one (a warning) and a deal.
      const dealCall = await submit(team.key, {
        transcript: TRANSCRIPT,
        repName: 'Sam Seller',
        repEmail: 'sam@acme.test',
        callTitle: 'Pricing call',
        callDate: '2026-01-14',
        duration: 95,
        tags: ['pricing', 'pilot'],
        notes: 'Budget approved in Q3',
        metadata: { crm: 'crm-4711', seats: 10, renewal: true, region: null },
        deal: { dealSize: 1200.5, revenueCollected: 300, dealDate: '2026-01-15', notes: 'Pilot for ten seats' },
        prospectMood: 'keen',
      });
      // An audio call whose recording is missing: it fails audio_not_found, is retried once the
      // recording is there, and completes through every audio step.
      const retriedCall = await submit(team.key, {
        audioUrl: `http://127.0.0.1:${(recordingHost.address() as AddressInfo).port}/recording.wav`,
        repName: 'Sam Seller',
      });
      const calls = [dealCall, retriedCall];
      const dealEvents = await h.callEvents(dealCall);
      assert.equal(dealEvents.at(-1)!.type, 'CallCompleted');
      await h.callEvents(retriedCall, lastIs('CallFailed'));
      // Its reservation comes back once CallFailed is stored, a moment after it shows in the store
      // (the API shows the failure later, from the call history): the retry then reserves anew.
      await eventually(async () =>
        assert.ok(
          (await h.eventStore.readStream(`team-${team.teamId}`)).some(
            (e) => e.type === 'CapacityReleased' && (e.data as { callId?: string }).callId === retriedCall,
          ),
        ),
      );
      recording = Buffer.alloc(4096, 1);
      const retry = await h.admin('POST', `/api/admin/calls/${retriedCall}/retry`);
      assert.equal(retry.statusCode, 202, retry.body);
      const retriedEvents = await h.callEvents(retriedCall, lastIs('CallCompleted'));

      // The payloads with their personal fields open: the events as the service reads them.
      for (const event of [...dealEvents, ...retriedEvents]) {
        if (!isCallEventType(event.type)) continue;
        const ceType = CLOUD_EVENT_TYPES[event.type];
        const listed = topicOf(h.topics.callEvents)?.messages.find((m) => m.ceType === ceType);
        await check(listed?.opened ?? listed?.schema, event.data, `${event.type} as the service reads it`);
      }

      // Every webhook body: before the erasure, which drops a call's deliveries not yet sent.
      const bodies = await receiver.waitFor(5, (r) => r.path === '/hooks', 30_000);
      assert.deepEqual(bodies.map((r) => r.json.type).sort(), [
        'call.completed',
        'call.completed',
        'call.failed',
        'deal.outcome.updated',
        'webhook.test',
      ]);
      const deal = bodies.find((r) => r.json.type === 'deal.outcome.updated')!;
      assert.equal(deal.json.data.repEmail, 'sam@acme.test', 'the webhook carries the personal fields open');
      const dealData = topicOf(h.topics.dealOutcomeUpdated)?.messages[0];
      await check(dealData?.opened, deal.json.data, "the deal.outcome.updated webhook's data");

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
      const [erasedBody] = await receiver.waitFor(1, (r) => r.path === '/hooks' && r.json.type === 'call.erased');
      for (const body of [...bodies, erasedBody!]) {
        const entry = index.schemas.find((s) => 'webhookType' in s && s.webhookType === body.json.type);
        await check(entry?.url, body.json, `the ${body.json.type} webhook body`);
      }

      // A record the processor cannot read: it goes to the dead-letter topic as received.
      const poison = randomUUID();
      await h.eventLog.publish(h.topics.callsSubmitted, [
        {
          key: poison,
          value: 'not json',
          headers: { ce_specversion: '1.0', ce_id: poison, ce_type: 'call.submitted', ce_source: '/elsewhere' },
        },
      ]);

      // Every event of the two calls, the erasure included, is relayed; their other messages are out.
      const stored = [
        ...(await h.callEvents(dealCall, lastIs('CallErased'))),
        ...(await h.eventStore.readStream(`call-${retriedCall}`)),
      ];
      const expected = new Map([
        [h.topics.callsSubmitted, calls.length],
        [h.topics.callEvents, stored.length],
        [h.topics.dealOutcomeUpdated, 1],
        [h.topics.deadLetter, 1],
      ]);
      const messages = await eventually(
        async () =>
          Promise.all(
            index.topics.map(async (topic) => {
              const records = await onTopic(topic.topic, topic.messages.length === 0 ? [poison] : calls);
              assert.equal(records.length, expected.get(topic.topic), `${topic.topic}: not every message is there yet`);
              return { topic, records };
            }),
          ),
        { timeoutMs: 20_000, intervalMs: 50 },
      );

      const seen = new Set<string>();
      const submittedValues = new Map<string, Record<string, unknown>>();
      for (const { topic, records } of messages) {
        for (const record of records) {
          const where = `${record.headers.ce_type} on ${topic.topic} (partition ${record.partition}, offset ${record.offset})`;
          if (topic.messages.length === 0) {
            // As received: the key, value and headers the record had, and why it is here.
            assert.equal(record.value, 'not json');
            assert.equal(record.headers.ce_source, '/elsewhere');
            for (const header of Object.keys(topic.headers)) assert.ok(record.headers[header], `${where}: ${header}`);
            continue;
          }
          const type = record.headers.ce_type!;
          const listed = topic.messages.find((m) => m.ceType === type);
          if (!listed) {
            problems.push(`${where}: ${topic.topic} is not listed as carrying ${type}: it has no served schema`);
            continue;
          }
          seen.add(`${topic.topic} ${type}`);
          assert.equal(record.headers.ce_specversion, '1.0', where);
          assert.equal(record.headers.ce_source, topic.ceSource, where);
          assert.equal(record.headers.ce_subject, record.key, where);
          assert.ok(record.headers.ce_id && record.headers.ce_time && record.headers.ce_teamid, where);
          assert.equal(record.headers.ce_sequence !== undefined, 'ce_sequence' in topic.headers, where);
          const value = JSON.parse(record.value) as Record<string, unknown>;
          const entry = index.schemas.find((s) => s.url === listed.schema);
          if (entry && 'sealedFields' in entry && entry.sealedFields.length > 0) {
            assert.match(String(value.sealed), /^v1\./, `${where} carries its personal fields sealed`);
            for (const secret of SECRETS)
              assert.ok(!record.value.includes(secret), `${where} holds ${secret} in clear`);
          }
          if (type === 'call.submitted') {
            const { sealed: _sealed, ...open } = value;
            const other = submittedValues.get(record.key);
            if (other) assert.deepEqual(open, other, `${where}: call.submitted is the same value on both topics`);
            submittedValues.set(record.key, open);
            if (topic.topic === h.topics.callsSubmitted) assert.equal(record.headers.ce_id, record.key, where);
          }
          await check(listed.schema, value, where);
        }
      }
      assert.equal(submittedValues.size, calls.length);

      assert.deepEqual(problems, []);
      assert.deepEqual(
        [...seen].sort(),
        index.topics.flatMap((t) => t.messages.map((m) => `${t.topic} ${m.ceType}`)).sort(),
        'every type the index lists for a topic was published there',
      );
      assert.deepEqual(
        [...checked].sort(),
        index.schemas.map((s) => s.url).sort(),
        'every served schema was checked against a real payload',
      );
    });
  });

void schemasContract('embedded default (SQLite)', (overrides, options) => openEmbeddedPipeline(overrides, options));
void schemasContract(
  'Kafka + PostgreSQL',
  (overrides, options) => openServersPipeline(overrides, options),
  serversSkip,
);
