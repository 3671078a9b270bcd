/**
 * A call's capacity when its end is not stored on the first try (the embedded store, a fault
 * injected in one append or read): a call is never completed free, and never failed after it was
 * charged.
 * - Failing gave the reservation back before CallFailed was stored: a CallFailed that could not be
 *   stored left the call pending with no reservation, and when the sweep woke it the call completed
 *   and its settlement found nothing to charge.
 * - A later run of a call already settled (its CallCompleted not stored) failed the call when its
 *   own settlement could not read the team: the call was failed though charged, and an operator's
 *   retry charged it again.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, test } from 'node:test';
import { pino } from 'pino';
import { createCallPipeline } from '../../../services/processor/call-pipeline.ts';
import { AggregateRepository } from '../../../services/runtime/aggregate-repository.ts';
import { createTeamWriter } from '../../../services/runtime/team-writer.ts';
import { createConversationAnalyser } from '../../../shared/adapters/analysis/conversation-analyser.ts';
import { createSqliteEventStore } from '../../../shared/adapters/event-store/sqlite-event-store.ts';
import { openSqlite } from '../../../shared/adapters/sqlite/sqlite-database.ts';
import { callEvents } from '../../../shared/domain/call/call-catalogue.ts';
import { callDecider } from '../../../shared/domain/call/call-decider.ts';
import type { CallSubmittedData } from '../../../shared/domain/call/call-submitted.ts';
import { estimateCallMinutes } from '../../../shared/domain/team/capacity.ts';
import type { Analyser } from '../../../shared/ports/analyser.ts';
import type { AudioSource } from '../../../shared/ports/audio-source.ts';
import { type EventStore, EventStoreUnavailableError } from '../../../shared/ports/event-store.ts';
import { StepError } from '../../../shared/ports/step-error.ts';
import type { Transcriber } from '../../../shared/ports/transcriber.ts';
import { overriding } from '../../support/embedded-ingress.ts';
import { tempDir } from '../../support/temp-dir.ts';

/** Faults to inject, each counted down as it strikes. */
const faults = { callFailedAppends: 0, callCompletedAppends: 0, teamReads: 0 };

const dir = tempDir();
const opened = openSqlite(dir.path);
const raw = createSqliteEventStore(opened.db);
const store: EventStore = overriding(raw, {
  append: (...args: Parameters<EventStore['append']>) => {
    const types = args[1].map((e) => e.type);
    if (faults.callFailedAppends > 0 && types.includes('CallFailed')) {
      faults.callFailedAppends--;
      return Promise.reject(new EventStoreUnavailableError('store down for CallFailed (test)'));
    }
    if (faults.callCompletedAppends > 0 && types.includes('CallCompleted')) {
      faults.callCompletedAppends--;
      return Promise.reject(new EventStoreUnavailableError('store down for CallCompleted (test)'));
    }
    return raw.append(...args);
  },
  readStream: (...args: Parameters<EventStore['readStream']>) => {
    if (faults.teamReads > 0 && args[0].startsWith('team-')) {
      faults.teamReads--;
      return Promise.reject(new EventStoreUnavailableError('store down for the team (test)'));
    }
    return raw.readStream(...args);
  },
});
const writer = createTeamWriter(store);
await writer.directory.start(store);
const teams = writer.repository;
const calls = new AggregateRepository(store, callDecider, callEvents);
after(async () => {
  await raw.close();
  opened.close();
  dir.remove();
});

const refusing = <T>(what: string) =>
  ({
    fetch: () => Promise.reject(new Error(`no ${what} (test)`)),
    transcribe: () => Promise.reject(new Error(`no ${what} (test)`)),
  }) as unknown as T;
const pipelineWith = (analyser: Analyser = createConversationAnalyser()) =>
  createCallPipeline({
    store,
    audio: refusing<AudioSource>('audio'),
    transcriber: refusing<Transcriber>('transcriber'),
    analyser,
    logger: pino({ level: 'silent' }),
    processingTimeoutMs: 3_600_000,
    retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 2 },
    transcriptionSlot: (_team: string, work: () => Promise<unknown>) => work(),
    downloadSlot: (_team: string, work: () => Promise<unknown>) => work(),
    audioFetchBudgetMs: 60_000,
    teams,
  } as unknown as Parameters<typeof createCallPipeline>[0]);

/** A team of 100 minutes and one transcript-only call of `words` words reserved on it. */
const submitted = async (words = 1500) => {
  const teamId = randomUUID();
  const now = new Date().toISOString();
  await teams.handle(teamId, {
    type: 'CreateTeam',
    teamId,
    name: 'T',
    owner: { name: 'O', email: 'o@x.test' },
    capacityMinutes: 100,
    now,
  } as never);
  const callId = randomUUID();
  const text = `Rep: ${Array.from({ length: words - 1 }, (_, i) => `w${i}`).join(' ')}`;
  const submission = {
    aiTitleEnabled: true,
    tags: [],
    metadata: {},
    transcript: { text, truncated: false, originalBytes: text.length },
  };
  const minutes = estimateCallMinutes(submission);
  await teams.handle(teamId, { type: 'ReserveCapacity', callId, minutes, now } as never);
  const data = {
    callId,
    teamId,
    keyId: 'k',
    submittedAt: now,
    submission,
    attributedTo: { kind: 'owner', email: 'o@x.test', name: 'O' },
    capacity: { reservedMinutes: minutes, autoRechargedMinutes: 0 },
    warnings: [],
  } as unknown as CallSubmittedData;
  await calls.handle(callId, { type: 'SubmitCall', data });
  const actor = {
    callId,
    teamId,
    signal: new AbortController().signal,
    outsideSlot: <T>(work: () => Promise<T>) => work(),
  };
  const team = async () => {
    const state = (await teams.load(teamId)).state as unknown as {
      remainingMinutes: number;
      usedMinutes: number;
      reservations: Map<string, unknown>;
    };
    return { remaining: state.remainingMinutes, used: state.usedMinutes, reserved: state.reservations.has(callId) };
  };
  return { callId, actor, team, minutes };
};

test('a failure whose CallFailed is not stored keeps the reservation: woken again, the call completes charged', async () => {
  const { callId, actor, team, minutes } = await submitted();
  let analyserUp = false;
  const real = createConversationAnalyser();
  const analyser = {
    inProcess: false,
    analyse: (...args: Parameters<Analyser['analyse']>) =>
      analyserUp ? real.analyse(...args) : Promise.reject(new StepError('analysis_unavailable', 'down (test)', true)),
  } as unknown as Analyser;
  const pipeline = pipelineWith(analyser);
  faults.callFailedAppends = 1;
  await pipeline.run(actor).catch(() => undefined);
  assert.equal((await calls.load(callId)).state.status, 'pending', 'CallFailed was not stored');
  assert.deepEqual(await team(), { remaining: 100 - minutes, used: 0, reserved: true }, 'the reservation is kept');
  analyserUp = true;
  await pipeline.run(actor); // the processor's sweep wakes the open call
  assert.equal((await calls.load(callId)).state.status, 'completed');
  const charged = await team();
  assert.ok(charged.used >= 1, `charged: ${JSON.stringify(charged)}`);
  assert.deepEqual(charged, { remaining: 100 - charged.used, used: charged.used, reserved: false });
});

test('a later run of a call already settled never fails it, though its settlement cannot read the team: it completes, charged once', async () => {
  const { callId, actor, team } = await submitted();
  const pipeline = pipelineWith();
  faults.callCompletedAppends = 2; // run 1 settles, then CompleteCall cannot be stored (both attempts)
  await pipeline.run(actor);
  const first = (await calls.load(callId)).state;
  assert.deepEqual([first.status, first.status === 'pending' && first.stage], ['pending', 'completing']);
  const settled = await team();
  assert.ok(settled.used >= 1 && !settled.reserved, `settled: ${JSON.stringify(settled)}`);
  faults.teamReads = 2; // run 2 (the sweep): its settlement's read of the team fails on both attempts
  await pipeline.run(actor);
  const second = (await calls.load(callId)).state;
  assert.notEqual(second.status, 'failed', 'a charged call is not failed');
  await pipeline.run(actor); // the store is back: the next wake-up completes it
  assert.equal((await calls.load(callId)).state.status, 'completed');
  assert.deepEqual(await team(), settled, 'charged once');
});

test('an inline-transcript call is settled at the minutes it was reserved at: 151 words (60.4 s) are two started minutes', async () => {
  const { callId, actor, team, minutes } = await submitted(151);
  assert.equal(minutes, 2);
  await pipelineWith().run(actor);
  assert.equal((await calls.load(callId)).state.status, 'completed');
  assert.deepEqual(await team(), { remaining: 98, used: 2, reserved: false });
});
