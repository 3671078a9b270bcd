/**
 * One team cannot starve the others: a team floods the processor at its full rate (30 calls a
 * minute per key) with audio URLs that never deliver — tarpits that send one byte every 5 s, and
 * host names that do not resolve — under the production deadlines and retry policy. Another team's
 * calls still go through within seconds, because a call waiting on the network or on a backoff
 * holds no processing slot, and slots, downloads and transcriptions are queued per team.
 */
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { readFileSync } from 'node:fs';
import { createHttpAudioSource } from '../../../shared/adapters/audio/http-audio-source.ts';
import { createSqliteEventLog } from '../../../shared/adapters/event-log/sql-event-log.ts';
import { createSqliteEventStore } from '../../../shared/adapters/event-store/sqlite-event-store.ts';
import { openSqlite } from '../../../shared/adapters/sqlite/sqlite-database.ts';
import { DEFAULT_RETRY } from '../../../services/processor/retry.ts';
import { audioServer, createPipelineHarness, eventData, type PipelineHarness } from '../../support/pipeline-harness.ts';
import {
  localTranscriptionRequired,
  missingForLocalTranscription,
  SPEECH_SAMPLE,
  synthesizeSpeech,
} from '../../support/speech.ts';
import { eventually } from '../../support/eventually.ts';
import { tempDir } from '../../support/temp-dir.ts';

const TRANSCRIPT = [
  'Rep: Hi Dana, thanks for taking the time today. How are you handling call reviews right now?',
  'Dana: Mostly spreadsheets, and the price of most tools is too high for us.',
  'Rep: Great, as a next step I will send you a proposal and schedule a demo for Friday.',
].join('\n');

/** The rate limit lets one key submit 30 calls a minute: the flood is all of them at once. */
const FLOOD = 30;
/** "Within a few seconds": generous, so only starvation fails it. */
const BOUND_MS = 10_000;

/** An HTTP server that answers 200 audio/wav and then sends one byte every 5 s, forever. */
const tarpit = async () => {
  const open = new Set<ServerResponse>();
  let requests = 0;
  const server = createServer((_request, response) => {
    requests++;
    open.add(response);
    response.writeHead(200, { 'content-type': 'audio/wav' });
    response.write(Buffer.from('R'));
    const drip = setInterval(() => response.write(Buffer.from('I')), 5000);
    response.on('close', () => {
      clearInterval(drip);
      open.delete(response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (i: number) => `http://127.0.0.1:${port}/slow-${i}.wav`,
    get requests() {
      return requests;
    },
    get open() {
      return open.size;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
};

describe('fair processing: one team flooding unfetchable audio', () => {
  const dir = tempDir();
  const opened = openSqlite(dir.path);
  const eventStore = createSqliteEventStore(opened.db);
  const eventLog = createSqliteEventLog(opened.db);
  let h: PipelineHarness;
  let slow: Awaited<ReturnType<typeof tarpit>>;
  let attacker: { teamId: string; key: string };
  let victim: { teamId: string; key: string };

  before(async () => {
    slow = await tarpit();
    // Production deadlines and retries: 10 min per download, 8 attempts backing off to 60 s, 60 min per call.
    h = await createPipelineHarness(
      { eventStore, eventLog },
      {
        audio: createHttpAudioSource({ maxBytes: 50 * 1024 * 1024, timeoutMs: 10 * 60_000, allowPrivate: true }),
        retry: DEFAULT_RETRY,
        processingTimeoutMs: 60 * 60_000,
      },
    );
    attacker = await h.team();
    victim = await h.team();

    for (let i = 0; i < FLOOD; i++) {
      const audioUrl = i % 2 === 0 ? slow.url(i) : `http://call-${i}.unresolvable.invalid/recording.wav`;
      const res = await h.ingest({ key: attacker.key, body: { audioUrl, repName: 'Flood' } });
      assert.equal(res.statusCode, 201, res.body);
    }
    // The flood is under way: tarpit downloads are open and unresolvable ones are backing off.
    await eventually(
      async () => {
        if (slow.open < 3) throw new Error(`${slow.open} tarpit downloads open`);
      },
      { timeoutMs: 10_000, intervalMs: 50 },
    );
    await new Promise((resolve) => setTimeout(resolve, 1000));
  });

  after(async () => {
    await h?.close();
    await slow?.close();
    await eventLog.close();
    await eventStore.close();
    opened.close();
    dir.remove();
  });

  test(`another team's transcript call completes within ${BOUND_MS / 1000} s while ${FLOOD} unfetchable audio calls of one team are pending`, async () => {
    const started = Date.now();
    const res = await h.ingest({ key: victim.key, body: { transcript: TRANSCRIPT, repName: 'Sam Seller' } });
    assert.equal(res.statusCode, 201, res.body);
    const { callId } = res.json<{ callId: string }>();
    const events = await h.callEvents(callId, undefined, 3 * BOUND_MS);
    const elapsed = Date.now() - started;
    console.log(
      `# other team's transcript call: ${elapsed} ms from submit to CallCompleted; tarpit downloads open: ${slow.open}, requested: ${slow.requests}`,
    );
    assert.ok(
      events.some((e) => e.type === 'CallCompleted'),
      events.map((e) => e.type).join(),
    );
    assert.ok(elapsed < BOUND_MS, `took ${elapsed} ms`);
  });

  test('the flooding team holds at most half of the downloads: the tarpit sees at most 8 at once', () => {
    assert.ok(slow.open <= 8, `${slow.open} tarpit downloads open at once`);
  });

  test(`another team's audio call is fetched and transcribed within ${BOUND_MS / 1000} s meanwhile (local engine)`, async (t) => {
    const missing = await missingForLocalTranscription();
    if (missing) {
      if (localTranscriptionRequired()) assert.fail(missing);
      return t.skip(missing);
    }
    const speech = join(dir.path, 'speech.wav');
    await synthesizeSpeech(SPEECH_SAMPLE.text, speech);
    const recording = await audioServer({ body: readFileSync(speech) });
    try {
      const started = Date.now();
      const res = await h.ingest({ key: victim.key, body: { audioUrl: recording.url, repName: 'Sam Seller' } });
      assert.equal(res.statusCode, 201, res.body);
      const { callId } = res.json<{ callId: string }>();
      const events = await h.callEvents(callId, undefined, 3 * BOUND_MS);
      const elapsed = Date.now() - started;
      console.log(`# other team's audio call: ${elapsed} ms from submit to CallCompleted`);
      assert.ok(
        events.some((e) => e.type === 'CallCompleted'),
        JSON.stringify(eventData(events, 'CallFailed')),
      );
      assert.equal(eventData(events, 'TranscriptRecorded')!.source, 'audio');
      assert.ok(elapsed < BOUND_MS, `took ${elapsed} ms`);
    } finally {
      await recording.close();
    }
  });
});
