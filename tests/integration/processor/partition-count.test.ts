/**
 * calls.submitted.v1 made with fewer partitions than TOPIC_PARTITIONS now says (an earlier start
 * made it with 3; the setting is 12): the log partitions records by the topic's 3, so a processor
 * that owned calls by `partitionForKey(callId, 12)` owned none whose number came out 3 or more. Such
 * calls got no processing deadline and were never resumed after a restart: pending for good. On the
 * embedded backends, as `services/processor/main.ts` opens them, the processor owns calls by the
 * topic's own count and the start-up says the setting is not the topic's.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { pino } from 'pino';
import { partitionForKey } from '../../../shared/adapters/event-log/partitioner.ts';
import { callEvents } from '../../../shared/domain/call/call-catalogue.ts';
import { loadConfig } from '../../../shared/config.ts';
import { openBackends } from '../../../services/runtime/backends.ts';
import { startProcessorService } from '../../../services/runtime/services.ts';
import { submittedData } from '../../conformance/read-models-fixtures.ts';
import { eventually } from '../../support/eventually.ts';
import { tempDir } from '../../support/temp-dir.ts';

const CONFIGURED = 12;
const REAL = 3;

/** A call id the configured count puts on a partition the topic does not have. */
const unownedByConfiguredCount = (): string => {
  for (;;) {
    const callId = randomUUID();
    if (partitionForKey(callId, CONFIGURED) >= REAL) return callId;
  }
};

/** A recording host that takes the connection and never answers: the call can only end by its deadline. */
const silentHost = async () => {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => void sockets.add(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};

test('a call whose id gives partition >= the topic’s count under TOPIC_PARTITIONS is resumed after a restart and gets its deadline', async (t) => {
  const dir = tempDir();
  t.after(() => dir.remove());
  const host = await silentHost();
  t.after(() => host.close());
  const env = (partitions: number) => ({
    DATA_DIR: dir.path,
    TOPIC_PARTITIONS: String(partitions),
    DATA_KEY_SECRET: 'partition-count-secret-0123456789abcdef0123',
    PROCESSING_TIMEOUT_MS: '3000',
    AUDIO_FETCH_ALLOW_PRIVATE: 'true',
    AUDIO_ALLOWED_PORTS: String(host.port),
    KAFKA_BROKERS: '',
    DATABASE_URL: '',
    REDIS_URL: '',
    KURRENTDB_URL: '',
  });

  // An earlier start made the topics with 3 partitions.
  await (await openBackends(loadConfig(env(REAL)), pino({ level: 'silent' }))).close();

  const warnings: Array<{ topic?: string; partitions?: number; msg: string }> = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(JSON.parse(line)) });
  const config = loadConfig(env(CONFIGURED));
  const backends = await openBackends(config, logger);
  t.after(() => backends.close());
  const submitted = backends.topics.callsSubmitted;
  assert.equal(await backends.eventLog.partitionCount(submitted), REAL);
  assert.ok(
    warnings.some((w) => w.topic === submitted && w.partitions === REAL && w.msg.includes('TOPIC_PARTITIONS=12')),
    `no warning names ${submitted}, its 3 partitions and TOPIC_PARTITIONS=12: ${JSON.stringify(warnings)}`,
  );

  // Two calls a processor took in before it stopped: stored, not yet worked on.
  const teamId = randomUUID();
  const now = new Date().toISOString();
  const inline = unownedByConfiguredCount();
  const audio = unownedByConfiguredCount();
  const teams = backends.teams.repository;
  await teams.handle(teamId, {
    type: 'CreateTeam',
    teamId,
    name: 'Partitions',
    owner: { email: 'owner@acme.test', name: 'Olive Owner' },
    capacityMinutes: 600,
    now,
  });
  for (const callId of [inline, audio])
    await teams.handle(teamId, { type: 'ReserveCapacity', callId, minutes: 1, now });
  await backends.eventStore.append(callEvents.streamId(inline), [
    callEvents.encode({ type: 'CallSubmitted', data: submittedData({ callId: inline, teamId, submittedAt: now }) }),
  ]);
  await backends.eventStore.append(callEvents.streamId(audio), [
    callEvents.encode({
      type: 'CallSubmitted',
      data: submittedData({
        callId: audio,
        teamId,
        submittedAt: now,
        submission: { audioUrl: `http://127.0.0.1:${host.port}/recording.wav` },
      }),
    }),
  ]);

  // The processor starts again, as services/processor/main.ts starts it.
  const processor = await startProcessorService(config, backends, pino({ level: 'silent' }));
  t.after(() => processor.stop());

  const outcome = (callId: string) =>
    eventually(
      async () => {
        const events = await backends.eventStore.readStream(callEvents.streamId(callId));
        const last = events.at(-1)!;
        assert.ok(last.type === 'CallCompleted' || last.type === 'CallFailed', `call still at ${last.type}`);
        return last;
      },
      { timeoutMs: 15_000, intervalMs: 50 },
    );
  assert.equal((await outcome(inline)).type, 'CallCompleted', 'the inline call was not resumed');
  const timedOut = await outcome(audio);
  assert.equal(timedOut.type, 'CallFailed');
  assert.equal((timedOut.data as { code: string }).code, 'processing_timeout', 'the audio call had no deadline');
});
