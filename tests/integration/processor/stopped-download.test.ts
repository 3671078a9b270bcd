/**
 * A call's downloaded audio is a temp file the actor must remove, however it ends. An actor gives
 * its processing slot back while it downloads and queues for one again afterwards; stopped while
 * it queues (a deadline, a revoked partition, an erasure, a shutdown), it never gets the download's
 * result, and the file is removed all the same. On the embedded event store, with the real pipeline
 * and actors; the audio source and the slot held meanwhile are the test's.
 */
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { pino } from 'pino';
import { createConversationAnalyser } from '../../../shared/adapters/analysis/conversation-analyser.ts';
import { createSqliteEventStore } from '../../../shared/adapters/event-store/sqlite-event-store.ts';
import { openSqlite } from '../../../shared/adapters/sqlite/sqlite-database.ts';
import { callEvents } from '../../../shared/domain/call/call-catalogue.ts';
import { callDecider } from '../../../shared/domain/call/call-decider.ts';
import type { AudioSource } from '../../../shared/ports/audio-source.ts';
import type { Transcriber } from '../../../shared/ports/transcriber.ts';
import { ActorSystem } from '../../../services/processor/actors.ts';
import { createCallPipeline } from '../../../services/processor/call-pipeline.ts';
import { FairQueue } from '../../../services/processor/fair-queue.ts';
import { AggregateRepository } from '../../../services/runtime/aggregate-repository.ts';
import { deferred } from '../../support/deferred.ts';
import { eventually } from '../../support/eventually.ts';
import { tempDir } from '../../support/temp-dir.ts';

const dir = tempDir('stopped-download-test-');
const opened = openSqlite(dir.path);
const store = createSqliteEventStore(opened.db);
after(async () => {
  await store.close();
  opened.close();
  dir.remove();
});

test('an actor stopped while it queues for its slot after a download removes the downloaded file', async () => {
  const path = join(dir.path, 'recording.wav');
  const downloading = deferred();
  const downloaded = deferred();
  const audio: AudioSource = {
    async fetch() {
      downloading.resolve();
      await downloaded.promise;
      writeFileSync(path, Buffer.alloc(1000));
      return {
        path,
        bytes: 1000,
        contentType: 'audio/wav',
        finalUrl: 'https://example.com/a.wav',
        cleanup: () => rm(path, { force: true }),
      };
    },
  };
  const transcriber: Transcriber = {
    transcribe: async () => ({ text: 'never asked', durationSeconds: 5, engine: 'fake' }),
    describe: () => 'fake transcriber',
    available: async () => ({ ok: true }),
  };
  const pipeline = createCallPipeline({
    store,
    audio,
    transcriber,
    analyser: createConversationAnalyser(),
    logger: pino({ level: 'silent' }),
    processingTimeoutMs: 60_000,
    retry: { maxAttempts: 3, baseDelayMs: 10, maxDelayMs: 50 },
    transcriptionSlot: (_team, work) => work(),
    downloadSlot: (_team, work) => work(),
    audioFetchBudgetMs: 60_000,
  });
  const slots = new FairQueue(1);
  const errors: unknown[] = [];
  const actors = new ActorSystem(
    (context) => pipeline.run(context),
    slots,
    (_callId, error) => errors.push(error),
  );
  const calls = new AggregateRepository(store, callDecider, callEvents);
  const callId = 'stopped-while-queued';
  await calls.handle(callId, {
    type: 'SubmitCall',
    data: {
      callId,
      teamId: 'team-1',
      keyId: 'key-1',
      submittedAt: new Date().toISOString(),
      submission: { aiTitleEnabled: true, tags: [], metadata: {}, audioUrl: 'https://example.com/a.wav' },
      attributedTo: { kind: 'owner', email: 'owner@acme.test', name: 'Olive' },
      capacity: { reservedMinutes: 1, autoRechargedMinutes: 0 },
      warnings: [],
    },
  });

  actors.wake(callId, 'team-1');
  await downloading.promise; // the actor downloads, outside its slot
  const release = await slots.acquire('team-2'); // another call takes the only slot meanwhile
  downloaded.resolve();
  await eventually(() => assert.equal(slots.waiting('team-1'), 1, 'the actor queues for its slot again'));
  await actors.stop(callId, 'processing timeout');
  release();

  assert.equal(existsSync(path), false, 'the downloaded file is removed');
  assert.deepEqual(errors, []);
});
