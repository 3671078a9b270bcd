/**
 * Operator controls through the admin API, on real backends with the processor and the
 * projections running in the test process:
 * - GET /api/admin/projections: checkpoints advance with a call and reach the head (lag 0); a
 *   projection stopped on an event says so, in this process and in another that does not run it;
 * - POST /api/admin/topics/calls.dead-letter.v1/redrive: a dead letter goes back to its source
 *   topic with its key, value and headers plus dlq_redriven_from; a copy that fails again is
 *   dead-lettered again exactly once;
 * - POST /api/admin/calls/:callId/retry: a call failed retriably completes after a retry, from its
 *   last good step, with capacity reserved again; what cannot be retried is refused.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createConversationAnalyser } from '../../../shared/adapters/analysis/conversation-analyser.ts';
import { deadLetterRecord } from '../../../shared/adapters/event-log/resilient-handler.ts';
import type { Analyser } from '../../../shared/ports/analyser.ts';
import type { Transcriber } from '../../../shared/ports/transcriber.ts';
import type { EventLog, LogRecord } from '../../../shared/ports/event-log.ts';
import type { EventStore, RecordedEvent } from '../../../shared/ports/event-store.ts';
import type { ReadModels } from '../../../shared/ports/read-models.ts';
import { StepError } from '../../../shared/ports/step-error.ts';
import { SKIPPED_EVENTS_STREAM } from '../../../services/projections/skipped-events.ts';
import { eventually } from '../../support/eventually.ts';
import { ADMIN_TOKEN, createHarness } from '../../support/ingress-harness.ts';
import { createPipelineHarness, type PipelineHarness } from '../../support/pipeline-harness.ts';

export interface OperatorBackends {
  eventStore: EventStore;
  eventLog: EventLog;
  readModels: ReadModels;
  cleanup(): Promise<void>;
}

const TRANSCRIPT =
  'Rep: Hello Dana, thanks for joining.\nDana: Happy to. Pricing is my worry.\nRep: We can start with a pilot next Tuesday.';

/**
 * The built-in analyser, except for transcripts carrying a marker: `REJECT-ONCE` is refused
 * (analysis_rejected, terminal) the first time; `HOLD` waits until `release()`; `UNRETRIABLE`
 * fails with a code a retry cannot change.
 */
const scriptedAnalyser = () => {
  const real = createConversationAnalyser();
  const rejected = new Set<string>();
  let release: () => void = () => {};
  let gate = new Promise<void>((resolve) => (release = resolve));
  const analyser: Analyser = {
    describe: () => 'scripted',
    async analyse(input, options) {
      if (input.transcript.includes('REJECT-ONCE') && !rejected.has(input.transcript)) {
        rejected.add(input.transcript);
        throw new StepError(
          'analysis_rejected',
          'The analyser refused the request (HTTP 400: model not found).',
          false,
        );
      }
      if (input.transcript.includes('UNRETRIABLE'))
        throw new StepError('transcript_empty', 'The transcript has no words to analyse.', false);
      if (input.transcript.includes('HOLD')) await gate;
      return real.analyse(input, options);
    },
  };
  return {
    analyser,
    release() {
      release();
      gate = new Promise<void>((resolve) => (release = resolve));
    },
  };
};

/** A transcriber that hears the same words in every recording (no engine needed). */
const fixedTranscriber: Transcriber = {
  describe: () => 'fixed',
  available: async () => ({ ok: true }),
  transcribe: async () => ({ text: TRANSCRIPT, durationSeconds: 42, engine: 'fixed' }),
};

/** A loopback port nothing listens on (yet). */
const closedPort = async (): Promise<number> => {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
};

type Problem = { status: number; code: string; detail: string; errors?: { field: string; message: string }[] };

export const operatorSuite = (
  name: string,
  factory: () => Promise<OperatorBackends>,
  options: { skip?: string } = {},
) => {
  describe(`operator controls: ${name}`, { skip: options.skip }, () => {
    let backends: OperatorBackends;
    let h: PipelineHarness;
    let team: { teamId: string; key: string };
    const scripted = scriptedAnalyser();

    const submit = async (body: Record<string, unknown> = { transcript: TRANSCRIPT }, key = team.key) => {
      const res = await h.ingest({ key, body });
      assert.equal(res.statusCode, 201, res.body);
      return res.json<{ callId: string }>().callId;
    };
    const lastIs = (type: string) => (events: RecordedEvent[]) => events.at(-1)?.type === type;
    const history = async (callId: string, key = team.key) => {
      const res = await h.ingress.app.inject({
        method: 'GET',
        url: `/api/calls/${callId}`,
        headers: { 'x-api-key': key },
      });
      return res.statusCode === 200
        ? res.json<{ status: string; stage: string | null; statusReason: string; processingError: string | null }>()
        : undefined;
    };
    const deadLettersOf = async (key: string) =>
      (await h.eventLog.read(h.topics.deadLetter, { limit: 10_000 })).filter((r) => r.key === key);
    const redrive = (body: Record<string, unknown>, topic = h.topics.deadLetter) =>
      h.admin('POST', `/api/admin/topics/${encodeURIComponent(topic)}/redrive`, body);
    type Status = {
      name: string;
      checkpoint: string;
      head: string;
      lag: number;
      version: number | null;
      state: string;
      stoppedOn?: { position: string; error: string };
    };
    const statuses = async (app = h.ingress.app) => {
      const res = await app.inject({
        method: 'GET',
        url: '/api/admin/projections',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      assert.equal(res.statusCode, 200, res.body);
      return res.json<{ head: string; projections: Status[] }>();
    };
    const byName = (all: { projections: Status[] }, projection: string) =>
      all.projections.find((p) => p.name === projection)!;
    const skipsRecorded = async () =>
      (await h.eventStore.readStream(SKIPPED_EVENTS_STREAM)).map(
        (e) => e.data as { projection: string; position: string },
      );
    /** A skip refused with 409 naming `position` and why; nothing is recorded. */
    const refusedSkip = async (app: typeof h.ingress.app, projection: string, position: bigint, rule: string) => {
      const recorded = (await skipsRecorded()).length;
      const res = await app.inject({
        method: 'POST',
        url: `/api/admin/projections/${projection}/skip`,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        payload: { position: position.toString(), reason: 'not the event it stopped on' },
      });
      assert.equal(res.statusCode, 409, res.body);
      assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
      const problem = res.json<Problem>();
      assert.equal(problem.code, 'CONFLICT');
      assert.deepEqual(problem.errors, [{ field: 'position', message: rule }]);
      assert.equal((await skipsRecorded()).length, recorded, 'a refused skip records nothing');
    };

    before(async () => {
      backends = await factory();
      h = await createPipelineHarness(
        backends,
        { analyser: scripted.analyser, transcriber: fixedTranscriber },
        { retryThresholdMs: 60_000 },
      );
      team = await h.team();
    });
    after(async () => {
      scripted.release();
      await h?.close();
      await backends?.cleanup();
    });

    test('GET /api/admin/projections: each checkpoint advances with a call and reaches the head (lag 0), version 1, running here', async () => {
      const unauthorised = await h.ingress.app.inject({ method: 'GET', url: '/api/admin/projections' });
      assert.equal(unauthorised.statusCode, 401);
      await h.projections!.caughtUp();
      const before = await statuses();
      const callId = await submit();
      await h.callEvents(callId, lastIs('CallCompleted'));
      const caughtUp = await eventually(
        async () => {
          const now = await statuses();
          for (const p of now.projections) assert.equal(p.lag, 0, `${p.name} not caught up: ${JSON.stringify(p)}`);
          return now;
        },
        { timeoutMs: 20_000, intervalMs: 50 },
      );
      console.log(
        `# projections: ${JSON.stringify(caughtUp.projections.map(({ name, checkpoint, head, lag, version, state }) => ({ name, checkpoint, head, lag, version, state })))}`,
      );
      assert.deepEqual(
        caughtUp.projections.map((p) => p.name),
        ['call-history', 'deals', 'webhooks', 'call-events-relay'],
      );
      assert.ok(BigInt(caughtUp.head) > BigInt(before.head), 'the head moved');
      for (const p of caughtUp.projections) {
        assert.ok(BigInt(p.checkpoint) > BigInt(byName(before, p.name).checkpoint), `${p.name} checkpoint advanced`);
        assert.equal(p.checkpoint, caughtUp.head);
        assert.equal(p.state, 'running');
      }
      assert.equal(byName(caughtUp, 'call-history').version, 1);
      assert.equal(byName(caughtUp, 'call-events-relay').version, null);
    });

    test('a running projection cannot be told to skip one of its events: 409 naming position, and nothing is recorded', async () => {
      const callId = await submit();
      await h.callEvents(callId, lastIs('CallCompleted'));
      const good = (await h.eventStore.readStream(`call-${callId}`))[0]!;
      await h.projections!.caughtUp();
      for (const projection of ['call-history', 'deals', 'webhooks'])
        await refusedSkip(
          h.ingress.app,
          projection,
          good.position,
          `${projection} is not stopped on position ${good.position}; it is running`,
        );
      // The history goes on: the feed shows CallCompleted once its WAL sync is done, which
      // `caughtUp` above may have come before (it follows what the feed shows).
      await eventually(async () => assert.equal((await history(callId))?.status, 'completed'), {
        timeoutMs: 10_000,
        intervalMs: 50,
      });
    });

    test('a projection stopped on an event is `stopped` with its error, also in a process that does not run it; running again after the skip', async () => {
      // Another ingress on the same backends, without the projections: a split deployment.
      const elsewhere = await createHarness({
        eventStore: h.eventStore,
        eventLog: h.eventLog,
        readModels: backends.readModels,
        topics: h.topics,
      });
      try {
        const poisonStream = `call-${randomUUID()}`;
        await h.eventStore.append(poisonStream, [{ type: 'CallSubmitted', data: { nonsense: true } }]);
        const poison = (await h.eventStore.readStream(poisonStream))[0]!;
        for (const app of [h.ingress.app, elsewhere.ingress.app]) {
          const stopped = await eventually(
            async () => {
              const history = byName(await statuses(app), 'call-history');
              assert.equal(history.state, 'stopped', JSON.stringify(history));
              return history;
            },
            { timeoutMs: 20_000, intervalMs: 100 },
          );
          assert.equal(stopped.stoppedOn?.position, poison.position.toString());
          assert.ok(stopped.stoppedOn.error.length > 0);
          assert.ok(BigInt(stopped.checkpoint) < poison.position);
        }
        const relayElsewhere = byName(await statuses(elsewhere.ingress.app), 'call-events-relay');
        assert.equal(relayElsewhere.state, 'unknown', 'a process that does not run the relay cannot say it runs');
        // Deal records stop on the same event (they decode CallSubmitted too): skipped once stopped.
        await eventually(
          async () => assert.equal(byName(await statuses(elsewhere.ingress.app), 'deals').state, 'stopped'),
          { timeoutMs: 20_000, intervalMs: 100 },
        );

        // Only the event a projection is stopped on: not another one, not for one that goes on.
        const earlier = (await h.eventStore.readAll({ after: 0n, maxCount: 1 }))[0]!;
        assert.ok(earlier.position < poison.position);
        await refusedSkip(
          h.ingress.app,
          'call-history',
          earlier.position,
          `call-history is not stopped on position ${earlier.position}; it is stopped on position ${poison.position}`,
        );
        await refusedSkip(
          h.ingress.app,
          'webhooks',
          poison.position,
          `webhooks is not stopped on position ${poison.position}; it is running`,
        );
        await refusedSkip(
          elsewhere.ingress.app,
          'webhooks',
          poison.position,
          `webhooks is not stopped on position ${poison.position}; it is not stopped or stuck on any event`,
        );

        // Here, where they run, and in a process that only reads their recorded stop.
        for (const [projection, app] of [
          ['call-history', h.ingress.app],
          ['deals', elsewhere.ingress.app],
        ] as const) {
          const skipped = await app.inject({
            method: 'POST',
            url: `/api/admin/projections/${projection}/skip`,
            headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
            payload: { position: poison.position.toString(), reason: 'malformed test event' },
          });
          assert.equal(skipped.statusCode, 201, skipped.body);
        }
        await eventually(
          async () => {
            const here = await statuses();
            for (const projection of ['call-history', 'deals']) assert.equal(byName(here, projection).state, 'running');
            const there = await statuses(elsewhere.ingress.app);
            for (const projection of ['call-history', 'deals'])
              assert.equal(byName(there, projection).state, 'unknown');
          },
          { timeoutMs: 30_000, intervalMs: 100 },
        );
        // Gone past it: skipping it again is refused.
        await refusedSkip(
          h.ingress.app,
          'call-history',
          poison.position,
          `call-history is not stopped on position ${poison.position}; it is running`,
        );
        assert.deepEqual((await skipsRecorded()).map((skip) => `${skip.projection} ${skip.position}`).sort(), [
          `call-history ${poison.position}`,
          `deals ${poison.position}`,
        ]);
      } finally {
        await elsewhere.close();
      }
    });

    test('redrive: only the dead-letter topic (400 naming the rule)', async () => {
      const refused = await redrive({ fromOffset: 0, limit: 10 }, h.topics.callsSubmitted);
      assert.equal(refused.statusCode, 400);
      const problem = refused.json<Problem>();
      assert.equal(problem.code, 'VALIDATION_FAILED');
      assert.equal(problem.errors?.[0]?.field, 'topic');
      assert.match(problem.errors[0].message, /must be the dead-letter topic/);
    });

    test('redrive without a partition pages on with nextOffsets as fromOffsets, reading every dead letter of every partition once', async () => {
      // Eight dead letters over the topic's partitions, so more on one than a page (2) holds; from a
      // source the service does not dead-letter from, so they are read and skipped, not sent anywhere.
      const start = new Map((await h.eventLog.endOffsets(h.topics.deadLetter)).map((e) => [e.partition, e.offset]));
      const marker = randomUUID();
      const records = Array.from({ length: 8 }, (_, i) => ({
        key: `${marker}-${i}`,
        value: 'x',
        headers: { dlq_source_topic: 'elsewhere' },
      }));
      const sent = await h.eventLog.publish(h.topics.deadLetter, records);
      const wanted = new Set(sent.map((p) => `${p.partition}/${p.offset}`));
      assert.ok(new Set(sent.map((p) => p.partition)).size > 1, 'the dead letters span partitions');

      const seen: string[] = [];
      let fromOffsets: Record<string, string> = Object.fromEntries(
        [...start].map(([partition, offset]) => [String(partition), offset.toString()]),
      );
      for (let page = 0; page < 20; page++) {
        const res = await redrive({ fromOffsets, limit: 2 });
        assert.equal(res.statusCode, 200, res.body);
        const body = res.json<{
          redriven: number;
          skipped: { partition: number; offset: string }[];
          nextOffsets: Record<string, string>;
        }>();
        assert.equal(body.redriven, 0);
        if (body.skipped.length === 0) break;
        seen.push(...body.skipped.map((d) => `${d.partition}/${d.offset}`));
        fromOffsets = body.nextOffsets;
      }
      assert.deepEqual(seen.filter((at) => wanted.has(at)).sort(), [...wanted].sort(), 'every dead letter read');
      assert.equal(new Set(seen).size, seen.length, 'none read twice');

      const refused = await redrive({ fromOffsets: { first: '0' }, limit: 1 });
      assert.equal(refused.statusCode, 400, refused.body);
      assert.equal(refused.json<Problem>().errors?.[0]?.field, 'fromOffsets.first');
    });

    test('redrive: a dead letter goes back to its source topic with its key, value and headers plus dlq_redriven_from, and its call completes', async () => {
      // A valid submission that was dead-lettered (as an earlier fault would have): the copy the processor wrote.
      const template = await h.submitted(await submit());
      const callId = randomUUID();
      const value = JSON.stringify({ ...JSON.parse(template.value), callId });
      const original: LogRecord = {
        ...template,
        key: callId,
        value,
        headers: { ...template.headers, ce_id: callId, ce_subject: callId },
      };
      const [dead] = await h.eventLog.publish(h.topics.deadLetter, [
        deadLetterRecord(original, 'Error: the store refused it (a fault since fixed)'),
      ]);

      const res = await redrive({ partition: dead!.partition, fromOffset: Number(dead!.offset), limit: 1 });
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json<{
        redriven: number;
        records: {
          partition: number;
          offset: string;
          sourceTopic: string;
          sourceOffset: string | null;
          redrivenTo: { partition: number; offset: string };
        }[];
        nextOffset: string;
      }>();
      assert.equal(body.redriven, 1);
      assert.equal(body.records[0]!.sourceTopic, h.topics.callsSubmitted);
      assert.equal(body.records[0]!.sourceOffset, template.offset.toString());
      assert.equal(body.nextOffset, (dead!.offset + 1n).toString());

      const copy = (
        await h.eventLog.read(h.topics.callsSubmitted, {
          partition: body.records[0]!.redrivenTo.partition,
          fromOffset: BigInt(body.records[0]!.redrivenTo.offset),
          limit: 1,
        })
      )[0]!;
      assert.equal(copy.key, callId);
      assert.equal(copy.value, value);
      assert.equal(copy.headers.dlq_redriven_from, `${h.topics.deadLetter}/${dead!.partition}/${dead!.offset}`);
      assert.equal(copy.headers.ce_type, template.headers.ce_type);
      assert.equal(copy.headers.ce_id, callId);
      assert.deepEqual(
        Object.keys(copy.headers).filter((k) => k.startsWith('dlq_')),
        ['dlq_redriven_from'],
        'the dead-lettering headers are not carried back',
      );
      await h.callEvents(callId, lastIs('CallCompleted'), 30_000);
    });

    test('redrive: a copy that fails again is dead-lettered again exactly once, naming the redrive; the operator may redrive it again', async () => {
      const key = randomUUID();
      await h.eventLog.publish(h.topics.callsSubmitted, [
        { key, value: 'not a call', headers: { ce_type: 'call.submitted', ce_id: key } },
      ]);
      const [first] = await eventually(
        async () => {
          const dead = await deadLettersOf(key);
          assert.equal(dead.length, 1, 'not dead-lettered yet');
          return dead;
        },
        { timeoutMs: 20_000, intervalMs: 50 },
      );
      const res = await redrive({ partition: first!.partition, fromOffset: Number(first!.offset), limit: 1 });
      assert.equal(res.statusCode, 200, res.body);
      const redrivenTo = res.json<{ records: { redrivenTo: { partition: number; offset: string } }[] }>().records[0]!
        .redrivenTo;
      // A valid call with the same key after the copy: same partition, handled after it.
      const template = await h.submitted(await submit());
      await h.eventLog.publish(h.topics.callsSubmitted, [
        { key, value: JSON.stringify({ ...JSON.parse(template.value), callId: key }), headers: template.headers },
      ]);
      await h.callEvents(key, lastIs('CallCompleted'), 30_000);

      const dead = await deadLettersOf(key);
      assert.equal(
        dead.length,
        2,
        `dead-lettered again exactly once: ${dead.map((d) => JSON.stringify(d.headers)).join(' | ')}`,
      );
      const again = dead.find((d) => d.offset !== first!.offset || d.partition !== first!.partition)!;
      assert.equal(again.value, 'not a call');
      assert.equal(again.headers.dlq_redriven_from, `${h.topics.deadLetter}/${first!.partition}/${first!.offset}`);
      assert.equal(again.headers.dlq_source_topic, h.topics.callsSubmitted);
      assert.equal(again.headers.dlq_source_partition, String(redrivenTo.partition));
      assert.equal(again.headers.dlq_source_offset, redrivenTo.offset);

      // Redriving a record that was redriven before is the operator's call; it is not a loop.
      const twice = await redrive({ partition: again.partition, fromOffset: Number(again.offset), limit: 1 });
      assert.equal(twice.statusCode, 200, twice.body);
      assert.equal(twice.json<{ redriven: number }>().redriven, 1);
      const third = await eventually(
        async () => {
          const all = await deadLettersOf(key);
          assert.equal(all.length, 3, 'not dead-lettered yet');
          return all.find(
            (d) => d.headers.dlq_redriven_from === `${h.topics.deadLetter}/${again.partition}/${again.offset}`,
          );
        },
        { timeoutMs: 20_000, intervalMs: 50 },
      );
      assert.ok(third, 'the third dead letter names the second as where it was redriven from');
    });

    test('retry: a call failed with analysis_rejected completes after a retry, from its last good step, with capacity reserved again; the history shows it pending again, then completed', async () => {
      const callId = await submit({ transcript: `${TRANSCRIPT}\nRep: REJECT-ONCE HOLD` });
      const failed = await h.callEvents(callId, lastIs('CallFailed'));
      assert.equal((failed.at(-1)!.data as { code: string }).code, 'analysis_rejected');
      await eventually(async () => assert.equal((await history(callId))?.processingError, 'analysis_rejected'), {
        timeoutMs: 20_000,
        intervalMs: 50,
      });

      const res = await h.admin('POST', `/api/admin/calls/${callId}/retry`);
      assert.equal(res.statusCode, 202, res.body);
      const retried = res.json<{
        status: string;
        resumesAt: string;
        previousFailure: { code: string };
        capacity: { reservedMinutes: number };
      }>();
      assert.deepEqual(
        [retried.status, retried.resumesAt, retried.previousFailure.code],
        ['pending', 'analysing', 'analysis_rejected'],
      );

      // Held at analysis: the history shows the call pending again, without its error.
      const pending = await eventually(
        async () => {
          const row = await history(callId);
          assert.equal(row?.status, 'pending', JSON.stringify(row));
          return row;
        },
        { timeoutMs: 20_000, intervalMs: 50 },
      );
      assert.deepEqual(
        [pending.stage, pending.statusReason, pending.processingError],
        ['analysing', 'analysing', null],
      );
      scripted.release();

      const events = await h.callEvents(callId, lastIs('CallCompleted'), 30_000);
      const types = events.map((e) => e.type);
      assert.deepEqual(
        types,
        [
          'CallSubmitted',
          'ProcessingStarted',
          'TranscriptRecorded',
          'CallFailed',
          'CallRetried',
          'CallAnalysed',
          'CallCompleted',
        ],
        'resumed at analysis: nothing before it again',
      );
      await eventually(async () => assert.equal((await history(callId))?.status, 'completed'), {
        timeoutMs: 20_000,
        intervalMs: 50,
      });

      // Capacity: reserved at ingest, released at the failure, reserved again by the retry, settled at completion.
      const capacity = (await h.eventStore.readStream(`team-${team.teamId}`))
        .filter((e) => (e.data as { callId?: string }).callId === callId)
        .map((e) => e.type);
      assert.deepEqual(capacity, ['CapacityReserved', 'CapacityReleased', 'CapacityReserved', 'CapacitySettled']);

      // Downstream consumers see the retry on calls.events.v1.
      await eventually(
        async () => {
          const messages = (await h.eventLog.read(h.topics.callEvents, { limit: 10_000 }))
            .filter((r) => r.key === callId)
            .map((r) => r.headers.ce_type);
          assert.deepEqual(messages.slice(-3), ['call.retried', 'call.analysed', 'call.completed']);
        },
        { timeoutMs: 20_000, intervalMs: 100 },
      );

      const again = await h.admin('POST', `/api/admin/calls/${callId}/retry`);
      assert.equal(again.statusCode, 409);
      assert.equal(again.json<Problem>().code, 'CALL_NOT_RETRIABLE');
      assert.match(again.json<Problem>().detail, /completed/);
    });

    test('retry: audio_unreachable while the recording host refused connections; once it serves, the retried call fetches, transcribes and completes', async () => {
      const port = await closedPort();
      const callId = await submit({ audioUrl: `http://127.0.0.1:${port}/recording.wav` });
      const failed = await h.callEvents(callId, lastIs('CallFailed'));
      assert.equal((failed.at(-1)!.data as { code: string }).code, 'audio_unreachable');

      const recording = Buffer.alloc(4096, 1);
      const host = createServer((_request, response) => {
        response.writeHead(200, { 'content-type': 'audio/wav', 'content-length': recording.length });
        response.end(recording);
      });
      await new Promise<void>((resolve) => host.listen(port, '127.0.0.1', resolve));
      try {
        const res = await h.admin('POST', `/api/admin/calls/${callId}/retry`);
        assert.equal(res.statusCode, 202, res.body);
        assert.equal(res.json<{ resumesAt: string }>().resumesAt, 'fetching_audio');
        const events = await h.callEvents(callId, lastIs('CallCompleted'), 30_000);
        assert.deepEqual(
          events.map((e) => e.type),
          [
            'CallSubmitted',
            'ProcessingStarted',
            'CallFailed',
            'CallRetried',
            'AudioFetched',
            'TranscriptRecorded',
            'CallAnalysed',
            'CallCompleted',
          ],
        );
        assert.equal(
          (events.find((e) => e.type === 'AudioFetched')!.data as { bytes: number }).bytes,
          recording.length,
        );
        await eventually(async () => assert.equal((await history(callId))?.status, 'completed'), {
          timeoutMs: 20_000,
          intervalMs: 50,
        });
      } finally {
        host.closeAllConnections();
        await new Promise<void>((resolve) => host.close(() => resolve()));
      }
    });

    test('retry: 404 for an unknown call, 409 naming the code for a failure a retry cannot change', async () => {
      const unknown = await h.admin('POST', `/api/admin/calls/${randomUUID()}/retry`);
      assert.equal(unknown.statusCode, 404);
      assert.equal(unknown.json<Problem>().code, 'NOT_FOUND');

      const callId = await submit({ transcript: `${TRANSCRIPT}\nRep: UNRETRIABLE` });
      await h.callEvents(callId, lastIs('CallFailed'));
      const refused = await h.admin('POST', `/api/admin/calls/${callId}/retry`);
      assert.equal(refused.statusCode, 409);
      const problem = refused.json<Problem>();
      assert.equal(problem.code, 'CALL_NOT_RETRIABLE');
      assert.match(problem.detail, /failed with transcript_empty/);
      assert.equal((await h.eventStore.readStream(`call-${callId}`)).at(-1)!.type, 'CallFailed', 'nothing recorded');
      // The failure gives the reservation back once CallFailed is stored: a moment after it shows.
      await eventually(async () => {
        const reserved = (await h.eventStore.readStream(`team-${team.teamId}`))
          .filter((e) => (e.data as { callId?: string }).callId === callId)
          .map((e) => e.type);
        assert.deepEqual(reserved, ['CapacityReserved', 'CapacityReleased'], 'a refused retry reserves nothing');
      });
    });

    test('retry: 402 when the team has no capacity left, like an ingest; after capacity is added the retry goes through', async () => {
      const small = await h.team({ capacityHours: 1 });
      const hour = { duration: 3600, durationUnit: 'seconds' };
      const failing = await submit({ transcript: `${TRANSCRIPT}\nRep: REJECT-ONCE`, ...hour }, small.key);
      await h.callEvents(failing, lastIs('CallFailed'));
      // Its hour comes back once CallFailed is stored: a moment after it shows.
      await eventually(async () =>
        assert.ok(
          (await h.eventStore.readStream(`team-${small.teamId}`)).some(
            (e) => e.type === 'CapacityReleased' && (e.data as { callId?: string }).callId === failing,
          ),
        ),
      );
      // Another call holds the team's hour while it waits at analysis.
      const holding = await submit({ transcript: `${TRANSCRIPT}\nRep: HOLD`, ...hour }, small.key);
      await h.callEvents(holding, (events) => events.some((e) => e.type === 'TranscriptRecorded'));

      const refused = await h.admin('POST', `/api/admin/calls/${failing}/retry`);
      assert.equal(refused.statusCode, 402, refused.body);
      assert.equal(refused.json<Problem>().code, 'CAPACITY_EXHAUSTED');
      // The call named is what needs the capacity: a retry takes no body.
      assert.deepEqual(refused.json<{ errors?: unknown }>().errors, [
        {
          field: 'callId',
          message:
            "needs about 60 minutes of live call capacity (the call's estimate) and the team has 0 minutes left, with auto-recharge off; a call is taken while any is left",
        },
      ]);
      assert.equal((await h.eventStore.readStream(`call-${failing}`)).at(-1)!.type, 'CallFailed');

      const added = await h.admin('POST', `/api/admin/teams/${small.teamId}/capacity`, { addHours: 2 });
      assert.equal(added.statusCode, 200, added.body);
      const res = await h.admin('POST', `/api/admin/calls/${failing}/retry`);
      assert.equal(res.statusCode, 202, res.body);
      assert.equal(res.json<{ capacity: { reservedMinutes: number } }>().capacity.reservedMinutes, 60);
      scripted.release();
      await h.callEvents(failing, lastIs('CallCompleted'), 30_000);
      await h.callEvents(holding, lastIs('CallCompleted'), 30_000);
    });
  });
};
