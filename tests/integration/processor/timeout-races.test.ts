/**
 * The processing deadline's timer against the call's actor, on the embedded pipeline: each
 * changes the team's capacity before it appends the call's end, in two writes. A call whose
 * actor settled it but could not store CallCompleted before the deadline is completed by the
 * timer, not failed (it would be failed and charged, and charged again on a retry); so is one
 * whose actor gave up storing CallCompleted after settling. A timeout that cannot be recorded is
 * tried again, but not once the processor has stopped.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { AudioSource } from '../../../shared/ports/audio-source.ts';
import { type EventStore, EventStoreUnavailableError } from '../../../shared/ports/event-store.ts';
import type { Transcriber } from '../../../shared/ports/transcriber.ts';
import { overriding } from '../../support/embedded-ingress.ts';
import { type EmbeddedPipeline, openEmbeddedPipeline } from '../../support/embedded-pipeline.ts';
import { eventually } from '../../support/eventually.ts';

const TIMEOUT_MS = 1000;

/** A recording that is there at once: the call's work is all in the process but its download. */
const audio: AudioSource = {
  fetch: async () => ({
    path: '/dev/null',
    bytes: 10,
    contentType: 'audio/wav',
    finalUrl: 'https://example.com/rec.wav',
    cleanup: async () => {},
  }),
};
const transcriber: Transcriber = {
  transcribe: async () => ({ text: 'Rep: Hello there.\nDana: Hi, glad to talk.', durationSeconds: 90, engine: 'fake' }),
  describe: () => 'fake transcriber',
  available: async () => ({ ok: true }),
};

describe('processing deadline against the call actor', () => {
  let embedded: EmbeddedPipeline;
  /** CallCompleted cannot be appended until then (epoch ms). */
  let completionsFailUntil = 0;

  before(async () => {
    embedded = await openEmbeddedPipeline(
      { processingTimeoutMs: TIMEOUT_MS, audio, transcriber },
      {
        wrapEventStore: (store: EventStore) =>
          overriding(store, {
            append: (...args: Parameters<EventStore['append']>) =>
              Date.now() < completionsFailUntil && args[1].some((e) => e.type === 'CallCompleted')
                ? Promise.reject(new EventStoreUnavailableError('store down for CallCompleted (test)'))
                : store.append(...args),
          }),
      },
    );
  });
  after(() => embedded.close());

  const cases = [
    {
      name: 'settled by its actor, CallCompleted not stored by the deadline: the timer completes the call, charged once',
      body: { transcript: 'Rep: Hello there.\nDana: Hi, glad to talk.' },
    },
    {
      name: 'an audio call its actor settled, CallCompleted not stored by the deadline: completed, charged once',
      body: { audioUrl: 'https://example.com/rec.wav' },
    },
  ];
  for (const { name, body } of cases) {
    test(name, async () => {
      const { h } = embedded;
      const { teamId, key } = await h.team();
      completionsFailUntil = Date.now() + TIMEOUT_MS + 100;
      const res = await h.ingest({ key, body });
      assert.equal(res.statusCode, 201, res.body);
      const { callId } = res.json<{ callId: string }>();
      const events = await h.callEvents(callId, undefined, 15_000);
      assert.deepEqual(
        events.filter((e) => e.type === 'CallCompleted' || e.type === 'CallFailed').map((e) => e.type),
        ['CallCompleted'],
      );
      const capacity = (await h.eventStore.readStream(`team-${teamId}`))
        .filter((e) => (e.data as { callId?: string }).callId === callId)
        .map((e) => e.type);
      assert.deepEqual(capacity, ['CapacityReserved', 'CapacitySettled']);
    });
  }
});

describe('a processing timeout that cannot be recorded', () => {
  let embedded: EmbeddedPipeline;
  /** When each attempt to append a call's processing_timeout was made (epoch ms). */
  const attempts: number[] = [];
  /** A recording whose download never ends until the actor is stopped. */
  const hanging: AudioSource = {
    fetch: (_url, options) =>
      new Promise((_resolve, reject) =>
        options?.signal?.addEventListener('abort', () => reject(options.signal!.reason), { once: true }),
      ),
  };

  before(async () => {
    embedded = await openEmbeddedPipeline(
      { processingTimeoutMs: TIMEOUT_MS, audio: hanging, transcriber },
      {
        wrapEventStore: (store: EventStore) =>
          overriding(store, {
            append: (...args: Parameters<EventStore['append']>) => {
              if (!args[1].some((e) => e.type === 'CallFailed')) return store.append(...args);
              attempts.push(Date.now());
              return Promise.reject(new EventStoreUnavailableError('store down for CallFailed (test)'));
            },
          }),
      },
    );
  });
  after(() => embedded.close());

  test('is tried again by a timer the processor clears when it stops', async () => {
    const { h } = embedded;
    const { key } = await h.team();
    const res = await h.ingest({ key, body: { audioUrl: 'https://example.com/rec.wav' } });
    assert.equal(res.statusCode, 201, res.body);
    await eventually(() => assert.ok(attempts.length >= 2, 'the timeout is tried, then tried again'), {
      timeoutMs: 15_000,
    });
    assert.ok(attempts[1]! - attempts[0]! >= 4900, 'tried again 5 s later');
    await h.stopProcessor();
    const stoppedWith = attempts.length;
    // A retry would come 5 s after the failed attempt.
    await new Promise((resolve) => setTimeout(resolve, attempts.at(-1)! + 6000 - Date.now()));
    assert.equal(attempts.length, stoppedWith, 'no timeout is tried once the processor has stopped');
  });
});
