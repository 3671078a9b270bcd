/**
 * The processor's bounds on a call's audio, on the embedded backend: the time one call may spend
 * fetching its audio over all attempts, and the temp files a killed process left behind, swept at
 * start.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { spawnSync } from 'node:child_process';
import { pino } from 'pino';
import { createConversationAnalyser } from '../../../shared/adapters/analysis/conversation-analyser.ts';
import { createHttpAudioSource } from '../../../shared/adapters/audio/http-audio-source.ts';
import { createSqliteEventLog } from '../../../shared/adapters/event-log/sql-event-log.ts';
import { createSqliteEventStore } from '../../../shared/adapters/event-store/sqlite-event-store.ts';
import { openSqlite } from '../../../shared/adapters/sqlite/sqlite-database.ts';
import { createLocalTranscriber } from '../../../shared/adapters/transcription/local-transcriber.ts';
import { allTopics, topicNames } from '../../../shared/topics.ts';
import { type Processor, startProcessor } from '../../../services/processor/processor.ts';
import { createHarness, type Harness } from '../../support/ingress-harness.ts';
import { eventData, finished, PARTITIONS } from '../../support/pipeline-harness.ts';
import { eventually } from '../../support/eventually.ts';
import { tempDir } from '../../support/temp-dir.ts';

/** Answers 200 audio/wav and sends a byte every 200 ms, never finishing. */
const tarpit = async () => {
  let requests = 0;
  const server = createServer((_request, response: ServerResponse) => {
    requests++;
    response.writeHead(200, { 'content-type': 'audio/wav' });
    const drip = setInterval(() => response.write(Buffer.from('x')), 200);
    response.on('close', () => clearInterval(drip));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/slow.wav`,
    get requests() {
      return requests;
    },
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
};

/** The id of a process that has exited. */
const deadPid = (): number => {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
};

describe('processor: audio limits', () => {
  const dir = tempDir();
  const opened = openSqlite(dir.path);
  const eventStore = createSqliteEventStore(opened.db);
  const eventLog = createSqliteEventLog(opened.db);
  const audioDir = join(dir.path, 'audio-tmp');
  const transcribeDir = join(dir.path, 'transcribe-tmp');
  const topics = topicNames(`t${randomUUID().slice(0, 8)}.`);
  let harness: Harness;
  let processor: Processor | undefined;
  let slow: Awaited<ReturnType<typeof tarpit>>;

  const start = (audioFetchBudgetMs: number) =>
    startProcessor({
      eventStore,
      eventLog,
      audio: createHttpAudioSource({ maxBytes: 1024 * 1024, timeoutMs: 1000, allowPrivate: true, tmpDir: audioDir }),
      transcriber: createLocalTranscriber({ tempDir: transcribeDir }),
      analyser: createConversationAnalyser(),
      logger: pino({ level: 'silent' }),
      processingTimeoutMs: 60_000,
      retry: { maxAttempts: 8, baseDelayMs: 10, maxDelayMs: 50 },
      audioFetchBudgetMs,
      topics,
      groupId: `processor-${randomUUID()}`,
    });

  before(async () => {
    mkdirSync(audioDir);
    mkdirSync(transcribeDir);
    await eventLog.ensureTopics(allTopics(topics).map((name) => ({ name, partitions: PARTITIONS })));
    harness = await createHarness({ eventStore, eventLog, topics });
    slow = await tarpit();
  });

  after(async () => {
    await processor?.stop();
    await harness?.close();
    await slow?.close();
    await eventLog.close();
    await eventStore.close();
    opened.close();
    dir.remove();
  });

  test('the time one call spends fetching its audio is bounded over all attempts, not per attempt: the call fails with the fetch’s own code', async () => {
    // 1 s per attempt and 8 attempts would be 8 s of fetching; the budget is 2.5 s.
    processor = await start(2500);
    const { key } = await harness.team();
    const started = Date.now();
    const res = await harness.ingest({ key, body: { audioUrl: slow.url } });
    assert.equal(res.statusCode, 201, res.body);
    const { callId } = res.json<{ callId: string }>();
    const events = await eventually(
      async () => {
        const events = await eventStore.readStream(`call-${callId}`);
        if (!finished(events)) throw new Error('not finished');
        return events;
      },
      { timeoutMs: 20_000, intervalMs: 20 },
    );
    const elapsed = Date.now() - started;
    console.log(`# fetch budget 2500 ms: the call failed after ${elapsed} ms and ${slow.requests} attempts`);
    const failed = eventData(events, 'CallFailed')!;
    assert.equal(failed.code, 'audio_timeout');
    assert.match(failed.reason, /over all attempts/);
    assert.ok(slow.requests <= 3, `${slow.requests} attempts`);
    assert.ok(elapsed < 6000, `took ${elapsed} ms`);
    await processor.stop();
    processor = undefined;
  });

  test('at start the processor removes the temp audio of processes that died, and keeps that of live ones', async () => {
    const dead = deadPid();
    const staleFile = join(audioDir, `audio-${dead}-${randomUUID()}`);
    const staleDir = join(transcribeDir, `transcribe-${dead}-a1b2c3`);
    const liveFile = join(audioDir, `audio-${process.ppid}-${randomUUID()}`);
    const oursFromBefore = join(audioDir, `audio-${process.pid}-${randomUUID()}`);
    const oursNow = join(audioDir, `audio-${process.pid}-${randomUUID()}`);
    const unrelated = join(audioDir, 'audio-notes.txt');
    for (const file of [staleFile, liveFile, oursFromBefore, oursNow, unrelated]) writeFileSync(file, 'bytes');
    mkdirSync(staleDir);
    writeFileSync(join(staleDir, 'audio.wav'), Buffer.alloc(1024));
    // A predecessor under the same pid (pid 1 in a container) wrote it before this process started.
    const beforeStart = (Date.now() - process.uptime() * 1000 - 60_000) / 1000;
    utimesSync(oursFromBefore, beforeStart, beforeStart);

    processor = await start(60_000);
    assert.equal(existsSync(staleFile), false, 'a dead process’s download is removed');
    assert.equal(existsSync(staleDir), false, 'a dead process’s decoded audio is removed');
    assert.equal(existsSync(oursFromBefore), false, 'a predecessor under our pid is removed');
    assert.equal(existsSync(liveFile), true, 'a live process’s download is kept');
    assert.equal(existsSync(oursNow), true, 'our own current download is kept');
    assert.equal(existsSync(unrelated), true, 'a file not named by a process is kept');
    await processor.stop();
    processor = undefined;
  });
});
