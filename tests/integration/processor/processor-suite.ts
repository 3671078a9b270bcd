/**
 * The call processor end to end: calls submitted through the real HTTP endpoint, processed by the
 * real processor on real backends. Run once per backend pair.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { pino } from 'pino';
import { callEvents } from '../../../shared/domain/call/call-catalogue.ts';
import { submittedData } from '../../conformance/read-models-fixtures.ts';
import { createHttpAudioSource } from '../../../shared/adapters/audio/http-audio-source.ts';
import { selectTranscriber } from '../../../shared/adapters/transcription/select-transcriber.ts';
import type { EventLog } from '../../../shared/ports/event-log.ts';
import type { EventStore } from '../../../shared/ports/event-store.ts';
import { createConversationAnalyser } from '../../../shared/adapters/analysis/conversation-analyser.ts';
import type { Analyser } from '../../../shared/ports/analyser.ts';
import { StepError } from '../../../shared/ports/step-error.ts';
import { eventually } from '../../support/eventually.ts';
import { audioServer, createPipelineHarness, eventData, type PipelineHarness } from '../../support/pipeline-harness.ts';
import {
  localTranscriptionRequired,
  missingForLocalTranscription,
  SPEECH_SAMPLE,
  synthesizeSpeech,
} from '../../support/speech.ts';
import { freePort } from '../../support/service-process.ts';
import { tempDir } from '../../support/temp-dir.ts';

export interface ProcessorBackends {
  eventStore: EventStore;
  eventLog: EventLog;
  cleanup(): Promise<void>;
}

const TRANSCRIPT = [
  'Rep: Hi Dana, thanks for taking the time today. How are you handling call reviews right now?',
  'Dana: Mostly spreadsheets. Honestly the price of most tools is too high for us.',
  'Rep: That makes sense. What would it be worth if your managers saved five hours a week?',
  'Dana: Quite a lot, if it really works.',
  'Rep: Great, as a next step I will send you a proposal and schedule a demo for Friday.',
].join('\n');

const statusOf = (types: string[]) =>
  types.includes('CallCompleted') ? 'completed' : types.includes('CallFailed') ? 'failed' : 'pending';

export const processorSuite = (
  name: string,
  factory: () => Promise<ProcessorBackends>,
  options: { skip?: string } = {},
) => {
  describe(`call processor: ${name}`, { skip: options.skip }, () => {
    let backends: ProcessorBackends;
    let h: PipelineHarness;
    before(async () => {
      backends = await factory();
      h = await createPipelineHarness(backends);
    });
    after(async () => {
      await h?.close();
      await backends?.cleanup();
    });

    /** Waits until the team's capacity reads [remaining minutes, open reservations]. */
    const capacityBecomes = (teamId: string, expected: [number, number]) =>
      eventually(async () => {
        const team = (await h.admin('GET', `/api/admin/teams/${teamId}`)).json<{
          capacity: { remainingMinutes: number; reservedCalls: number };
        }>();
        assert.deepEqual([team.capacity.remainingMinutes, team.capacity.reservedCalls], expected);
      });

    const submit = async (body: Record<string, unknown>, key?: string) => {
      const res = await h.ingest({ key: key ?? (await h.team()).key, body });
      assert.equal(res.statusCode, 201, res.body);
      return res.json<{ callId: string }>().callId;
    };

    test('transcript only: the call reaches completed with an AI title, a score and insights', async () => {
      const started = Date.now();
      const callId = await submit({ transcript: TRANSCRIPT, repName: 'Sam Seller', callTitle: 'ignored by default' });
      const events = await h.callEvents(callId);
      const elapsed = Date.now() - started;
      assert.deepEqual(
        events.map((e) => e.type),
        ['CallSubmitted', 'ProcessingStarted', 'TranscriptRecorded', 'CallAnalysed', 'CallCompleted'],
      );
      assert.equal(eventData(events, 'TranscriptRecorded')!.source, 'inline');
      const analysis = eventData(events, 'CallAnalysed')!;
      assert.ok(analysis.title.length > 0 && analysis.title !== 'ignored by default', analysis.title);
      assert.ok(Number.isInteger(analysis.score) && analysis.score >= 0 && analysis.score <= 100);
      assert.ok(analysis.insights.length > 0);
      for (const insight of analysis.insights)
        assert.ok(
          insight.evidence.length > 0 && TRANSCRIPT.includes(insight.evidence.replace(/^"|"$/g, '').slice(0, 20)),
          insight.evidence,
        );
      console.log(`# transcript-only call completed in ${elapsed} ms (submit → CallCompleted)`);
    });

    test('a call whose every step runs here is stored with its steps in one append, then settled and completed', async () => {
      const { teamId, key } = await h.team({ capacityHours: 1 });
      const callId = await submit({ transcript: TRANSCRIPT, duration: 600, durationUnit: 'seconds' }, key);
      const events = await h.callEvents(callId);
      assert.deepEqual(
        events.map((e) => e.type),
        ['CallSubmitted', 'ProcessingStarted', 'TranscriptRecorded', 'CallAnalysed', 'CallCompleted'],
      );
      // CallSubmitted and the steps in one transaction (consecutive positions, one recording time);
      // the settlement, appended after them and before CallCompleted, lies in between, so the call
      // is reserved or stored at every moment.
      const [submitted, ...steps] = events.slice(0, 4);
      assert.deepEqual(
        steps.map((e) => Number(e.position - submitted!.position)),
        [1, 2, 3],
      );
      assert.equal(new Set(events.slice(0, 4).map((e) => e.recordedAt.getTime())).size, 1);
      assert.ok(events[4]!.position - events[3]!.position > 1n, 'the settlement comes before CallCompleted');
      await capacityBecomes(teamId, [50, 0]);
    });

    test("when a step fails at intake, the call takes the actor's way: CallSubmitted first, the step retried, then completed", async () => {
      const builtIn = createConversationAnalyser();
      let failures = 1;
      const flaky: Analyser = {
        inProcess: true,
        describe: () => 'fails once, then the built-in analyser',
        async analyse(input, options) {
          if (failures-- > 0) throw new StepError('analysis_unavailable', 'not this time', true);
          // Takes a while: the actor's steps are recorded visibly later than the CallSubmitted before them.
          await new Promise((resolve) => setTimeout(resolve, 20));
          return builtIn.analyse(input, options);
        },
      };
      await h.stopProcessor();
      await h.startProcessor({ analyser: flaky, retry: { maxAttempts: 3, baseDelayMs: 10, maxDelayMs: 20 } });
      try {
        const callId = await submit({ transcript: TRANSCRIPT });
        const events = await h.callEvents(callId);
        assert.deepEqual(
          events.map((e) => e.type),
          ['CallSubmitted', 'ProcessingStarted', 'TranscriptRecorded', 'CallAnalysed', 'CallCompleted'],
        );
        assert.ok(failures < 0, 'the analyser ran again after its failure');
        // CallSubmitted was appended alone, before the steps (the analysis ran in between).
        assert.ok(events[1]!.recordedAt.getTime() > events[0]!.recordedAt.getTime());
      } finally {
        await h.stopProcessor();
        await h.startProcessor();
      }
    });

    test('valid deal data is recorded on the call before it completes', async () => {
      const callId = await submit({
        transcript: TRANSCRIPT,
        dealSize: '1200.50',
        revenue_collected: 300,
        deal_date: '2026-11-20',
      });
      const events = await h.callEvents(callId);
      const types = events.map((e) => e.type);
      assert.ok(
        types.indexOf('DealRecorded') > types.indexOf('CallAnalysed') &&
          types.indexOf('DealRecorded') < types.indexOf('CallCompleted'),
        types.join(),
      );
      assert.deepEqual(eventData(events, 'DealRecorded')!.deal, {
        dealSize: 1200.5,
        revenueCollected: 300,
        dealDate: '2026-11-20T00:00:00.000Z',
      });
    });

    test('completing a call settles its capacity to the real length', async () => {
      const { teamId, key } = await h.team({ capacityHours: 1 });
      const callId = await submit({ transcript: TRANSCRIPT, duration: 600, durationUnit: 'seconds' }, key);
      await h.callEvents(callId);
      await capacityBecomes(teamId, [50, 0]);
    });

    test('audio that cannot be fetched (blocked address) fails the call with a stable code and a reason', async () => {
      await h.stopProcessor();
      await h.startProcessor({
        audio: createHttpAudioSource({ maxBytes: 1024, timeoutMs: 5000, allowPrivate: false }),
      });
      try {
        const callId = await submit({ audioUrl: 'http://127.0.0.1/recording.wav' });
        const events = await h.callEvents(callId);
        const failed = eventData(events, 'CallFailed')!;
        assert.equal(failed.code, 'audio_fetch_blocked');
        assert.equal(
          failed.reason,
          'The audio host "127.0.0.1" could not be reached, or is not a public internet address.',
        );
      } finally {
        await h.stopProcessor();
        await h.startProcessor();
      }
    });

    test('a call that fails before its deal step still has its valid deal written, just before CallFailed', async () => {
      await h.stopProcessor();
      await h.startProcessor({
        audio: createHttpAudioSource({ maxBytes: 1024, timeoutMs: 5000, allowPrivate: false }),
      });
      try {
        const callId = await submit({
          audioUrl: 'http://127.0.0.1/recording.wav',
          deal: { dealSize: 5000, revenueCollected: '250.25', notes: 'Signed before the recording was lost' },
        });
        const events = await h.callEvents(callId);
        assert.deepEqual(events.map((e) => e.type).slice(-2), ['DealRecorded', 'CallFailed']);
        assert.equal(eventData(events, 'CallFailed')!.code, 'audio_fetch_blocked');
        assert.deepEqual(eventData(events, 'DealRecorded')!.deal, {
          dealSize: 5000,
          revenueCollected: 250.25,
          notes: 'Signed before the recording was lost',
        });
      } finally {
        await h.stopProcessor();
        await h.startProcessor();
      }
    });

    test('processing timeout: a call still pending past its deadline fails with processing_timeout, and its capacity is released', async () => {
      const stalling = await audioServer({ body: Buffer.alloc(1000), delayMs: 60_000 });
      await h.stopProcessor();
      await h.startProcessor({ processingTimeoutMs: 400 });
      try {
        const { teamId, key } = await h.team({ capacityHours: 1 });
        const callId = await submit({ audioUrl: stalling.url, duration: 5, durationUnit: 'minutes' }, key);
        const events = await h.callEvents(callId);
        const failed = eventData(events, 'CallFailed')!;
        assert.deepEqual([failed.code, failed.reason], ['processing_timeout', 'processing_timeout']);
        await capacityBecomes(teamId, [60, 0]);
      } finally {
        await stalling.close();
        await h.stopProcessor();
        await h.startProcessor();
      }
    });

    test('the deadline survives a restart: the next processor times the call out at the recorded deadline', async () => {
      const stalling = await audioServer({ body: Buffer.alloc(1000), delayMs: 60_000 });
      await h.stopProcessor();
      await h.startProcessor({ processingTimeoutMs: 3000 });
      try {
        const callId = await submit({ audioUrl: stalling.url });
        await eventually(() => assert.ok(stalling.hits >= 1, 'the fetch started'));
        await h.stopProcessor();
        const atStop = (await backends.eventStore.readStream(`call-${callId}`)).map((e) => e.type);
        assert.deepEqual(
          atStop,
          ['CallSubmitted', 'ProcessingStarted'],
          'still pending when the first processor stopped',
        );
        // The next processor is configured with a long timeout: only the recorded deadline can fail the call.
        await h.startProcessor({ processingTimeoutMs: 3_600_000 });
        const events = await h.callEvents(callId);
        assert.equal(eventData(events, 'CallFailed')!.code, 'processing_timeout');
        assert.equal(
          Date.parse(eventData(events, 'CallFailed')!.at) >=
            Date.parse(eventData(events, 'ProcessingStarted')!.deadline),
          true,
        );
      } finally {
        await stalling.close();
        await h.stopProcessor();
        await h.startProcessor();
      }
    });

    test('a record that cannot be parsed goes to calls.dead-letter.v1 with the reason, and the consumer moves on', async () => {
      await h.eventLog.publish(h.topics.callsSubmitted, [
        {
          key: 'garbage-1',
          value: '{not json',
          headers: {
            ce_specversion: '1.0',
            ce_id: 'x',
            ce_type: 'call.submitted',
            ce_source: 'test',
            ce_time: new Date().toISOString(),
          },
        },
      ]);
      await h.eventLog.publish(h.topics.callsSubmitted, [{ key: 'garbage-2', value: '{}', headers: {} }]);
      const callId = await submit({ transcript: TRANSCRIPT });
      await h.callEvents(callId);
      const dead = await eventually(async () => {
        const records = await h.eventLog.read(h.topics.deadLetter, { limit: 100 });
        assert.equal(records.length, 2);
        return records;
      });
      const byKey = Object.fromEntries(dead.map((r) => [r.key, r]));
      assert.match(byKey['garbage-1']!.headers.dlq_reason!, /not JSON/);
      assert.match(byKey['garbage-2']!.headers.dlq_reason!, /missing CloudEvents header/);
      assert.equal(byKey['garbage-1']!.headers.dlq_source_topic, h.topics.callsSubmitted);
      assert.equal(byKey['garbage-1']!.value, '{not json');
    });

    test('a redelivered CallSubmitted record changes nothing: one stream, each step once', async () => {
      const callId = await submit({ transcript: TRANSCRIPT });
      await h.callEvents(callId);
      const record = (await h.submitted(callId)) as { key: string; value: string; headers: Record<string, string> };
      await h.eventLog.publish(h.topics.callsSubmitted, [
        { key: record.key, value: record.value, headers: record.headers },
      ]);
      const marker = await submit({ transcript: TRANSCRIPT });
      await h.callEvents(marker); // processed after the duplicate, on whatever partition
      await eventually(async () =>
        assert.ok(
          (await h.eventLog.read(h.topics.callsSubmitted, { limit: 100_000 })).filter((r) => r.key === callId)
            .length === 2,
        ),
      );
      const events = await backends.eventStore.readStream(`call-${callId}`);
      assert.deepEqual(
        events.map((e) => e.type),
        ['CallSubmitted', 'ProcessingStarted', 'TranscriptRecorded', 'CallAnalysed', 'CallCompleted'],
      );
    });

    test('a call interrupted by a processor stop is resumed by the next one from its last event', async () => {
      const slow = await audioServer({ body: Buffer.alloc(2000), delayMs: 400 });
      // A transcription engine nobody listens for: every attempt is refused.
      const unreachable = selectTranscriber({ transcribeUrl: `http://127.0.0.1:${await freePort()}` });
      await h.stopProcessor();
      await h.startProcessor({ transcriber: unreachable });
      try {
        const callId = await submit({ audioUrl: slow.url });
        await eventually(() => assert.ok(slow.hits >= 1));
        await h.stopProcessor();
        const before = (await backends.eventStore.readStream(`call-${callId}`)).map((e) => e.type);
        assert.equal(statusOf(before), 'pending');
        await h.startProcessor({ transcriber: unreachable });
        const events = await h.callEvents(callId);
        const types = events.map((e) => e.type);
        assert.equal(types.filter((t) => t === 'CallSubmitted').length, 1);
        assert.equal(types.filter((t) => t === 'ProcessingStarted').length, 1);
        assert.equal(types.filter((t) => t === 'AudioFetched').length, 1);
        assert.match(
          eventData(events, 'CallFailed')?.code ?? '',
          /^transcription_/,
          'the unreachable engine ends the call after its retries',
        );
      } finally {
        await slow.close();
        await h.stopProcessor();
        await h.startProcessor();
      }
    });

    test('the sweep resumes an open call no actor works, once it has seen it so twice, and says so', async () => {
      const lines: string[] = [];
      await h.stopProcessor();
      await h.startProcessor({
        sweepIntervalMs: 150,
        logger: pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) }),
      });
      try {
        const callId = randomUUID();
        const { teamId } = await h.team();
        // Stored without its record on the log, as a call whose actor failed is left: only the
        // sweep wakes it (the processor's start resumed what was open before it).
        await backends.eventStore.append(`call-${callId}`, [
          callEvents.encode({
            type: 'CallSubmitted',
            data: submittedData({ callId, teamId, submittedAt: new Date().toISOString() }),
          }),
        ]);
        const events = await h.callEvents(callId);
        assert.equal(events.at(-1)!.type, 'CallCompleted', events.map((e) => e.type).join(', '));
        const sweeps = lines
          .map((line) => JSON.parse(line) as { msg: string; woken?: number })
          .filter((entry) => entry.msg === 'sweep found open calls no actor was working; resumed them');
        assert.deepEqual(
          sweeps.map((entry) => entry.woken),
          [1],
        );
      } finally {
        await h.stopProcessor();
        await h.startProcessor();
      }
    });

    test('audio with the local engine: the transcript contains the spoken words', async (t) => {
      const missing = await missingForLocalTranscription();
      if (missing) {
        if (localTranscriptionRequired()) assert.fail(`REQUIRE_LOCAL_TRANSCRIPTION=1 but ${missing}`);
        t.skip(`local transcription unavailable: ${missing}`);
        return;
      }
      const dir = tempDir();
      try {
        const wav = `${dir.path}/speech.wav`;
        await synthesizeSpeech(SPEECH_SAMPLE.text, wav);
        const { readFile } = await import('node:fs/promises');
        const server = await audioServer({ body: await readFile(wav) });
        try {
          const callId = await submit({ audioUrl: server.url, transcript: 'the inline transcript is only secondary' });
          const events = await h.callEvents(callId, undefined, 120_000);
          assert.equal(eventData(events, 'CallFailed'), undefined, JSON.stringify(eventData(events, 'CallFailed')));
          const transcript = eventData(events, 'TranscriptRecorded')!;
          assert.equal(transcript.source, 'audio');
          const words = SPEECH_SAMPLE.keyWords.filter((w) => transcript.text.toLowerCase().includes(w));
          assert.ok(
            words.length >= 3,
            `transcript "${transcript.text}" has too few of the spoken words ${SPEECH_SAMPLE.keyWords.join(', ')}`,
          );
          assert.ok(transcript.durationSeconds! > 1 && transcript.durationSeconds! < 10);
        } finally {
          await server.close();
        }
      } finally {
        dir.remove();
      }
    });
  });
};
