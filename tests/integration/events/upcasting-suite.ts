/**
 * Stored events of an older shape, and events that do not decode, on a real event store
 * (docs/decisions/0016-event-catalogues-and-upcasting.md). The rows are written with SQL, as an
 * older version of the service left them, not through the store's append.
 *
 * TranscriptRecorded version 1 carries no `segments`; version 2 (today) does. The call aggregate,
 * the call history projection and a replay of it must all read the version-1 rows as today's shape,
 * and the service's own new events must be stored at version 2.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, test } from 'node:test';
import pino from 'pino';
import { callDecider } from '../../../shared/domain/call/call-decider.ts';
import { callEvents } from '../../../shared/domain/call/call-catalogue.ts';
import { EventDecodeError, SCHEMA_VERSION } from '../../../shared/domain/event-catalogue.ts';
import type { EventLog } from '../../../shared/ports/event-log.ts';
import type { EventStore, Json } from '../../../shared/ports/event-store.ts';
import type { ReadModels } from '../../../shared/ports/read-models.ts';
import { TOPICS } from '../../../shared/topics.ts';
import { AggregateRepository } from '../../../services/runtime/aggregate-repository.ts';
import { Health } from '../../../services/runtime/health.ts';
import { startProjections } from '../../../services/projections/projections.ts';
import { projectionStatuses } from '../../../services/projections/projection-status.ts';
import { replayProjection } from '../../../services/projections/replay.ts';
import { analysis, at, catchUp, submittedData } from '../../conformance/read-models-fixtures.ts';
import { eventually } from '../../support/eventually.ts';

/** A row of the events table as an older version of the service wrote it. */
export interface RawEventRow {
  streamId: string;
  revision: number;
  type: string;
  data: Json;
  metadata: Record<string, Json>;
}

export interface UpcastingBackends {
  eventStore: EventStore;
  eventLog: EventLog;
  readModels: ReadModels;
  cleanup(): Promise<void>;
}

/**
 * Backends on a database whose events table already holds `rows`, written with SQL before the
 * service opened it (as a restarted service finds what an older version left).
 */
export type UpcastingFactory = (rows: RawEventRow[]) => Promise<UpcastingBackends>;

/** An inline WebVTT transcript: version-1 events carry only this text. */
const VTT =
  'WEBVTT\n\n00:00:01.000 --> 00:00:02.500\n<v Rep>Hi Dana, how do you review calls today?\n\n' +
  '00:00:03.000 --> 00:00:05.000\n<v Dana>Spreadsheets, mostly.\n';
const VTT_SEGMENTS = [
  { start: 1, end: 2.5, speaker: 'Rep', text: 'Hi Dana, how do you review calls today?' },
  { start: 3, end: 5, speaker: 'Dana', text: 'Spreadsheets, mostly.' },
];

/** A call as version 1 stored it: submitted, started, and its transcript without segments. */
const v1Call = (teamId: string) => {
  const data = submittedData({
    teamId,
    submission: { transcript: { text: VTT, truncated: false, originalBytes: VTT.length } },
  });
  const streamId = callEvents.streamId(data.callId);
  const rows: RawEventRow[] = [
    {
      streamId,
      revision: 0,
      type: 'CallSubmitted',
      data: callEvents.encode({ type: 'CallSubmitted', data }).data,
      metadata: {},
    },
    {
      streamId,
      revision: 1,
      type: 'ProcessingStarted',
      data: { mode: 'transcript', deadline: at(3600), at: at(1) },
      metadata: {},
    },
    {
      streamId,
      revision: 2,
      type: 'TranscriptRecorded',
      // Version 1: no `segments`, no schemaVersion in the metadata.
      data: { source: 'inline', text: VTT, truncated: false, durationSeconds: 5, engine: null, at: at(2) },
      metadata: {},
    },
  ];
  return { data, rows };
};

export const upcastingSuite = (name: string, factory: UpcastingFactory, options: { skip?: string } = {}) => {
  describe(`event catalogues on stored rows: ${name}`, { skip: options.skip }, () => {
    const opened: UpcastingBackends[] = [];
    const open = async (rows: RawEventRow[]) => {
      const backends = await factory(rows);
      opened.push(backends);
      return backends;
    };
    after(async () => {
      for (const b of opened) await b.cleanup();
    });

    test('version-1 TranscriptRecorded rows: the aggregate, the history projection and a replay read them as version 2', async () => {
      const teamId = `team-${randomUUID()}`;
      const { data, rows } = v1Call(teamId);
      const b = await open(rows);
      const store = b.eventStore;

      // The aggregate folds the old rows into today's state, segments included, and decides on it.
      const calls = new AggregateRepository(store, callDecider, callEvents);
      const loaded = await calls.load(data.callId);
      assert.equal(loaded.version, 2);
      assert.ok(loaded.state.status === 'pending' && loaded.state.transcript);
      assert.equal(loaded.state.stage, 'analysing');
      assert.deepEqual(loaded.state.transcript.segments, VTT_SEGMENTS);
      await calls.handle(data.callId, {
        type: 'RecordAnalysis',
        analysis: analysis('Review with Dana', 64),
        now: at(3),
      });
      await calls.handle(data.callId, { type: 'CompleteCall', now: at(4) });
      const done = await new AggregateRepository(store, callDecider, callEvents).load(data.callId);
      assert.equal(done.state.status, 'completed');
      assert.equal(done.state.status === 'completed' && done.state.durationSeconds, 5);

      // The history projection, fed from the store's feed as the runner feeds it.
      await catchUp(store, b.readModels.callHistory);
      const row = await b.readModels.callHistory.get(teamId, data.callId);
      assert.ok(row, 'the call has a history row');
      assert.equal(row.status, 'completed');
      assert.equal(row.stage, null);
      assert.equal(row.title, 'Review with Dana');
      assert.deepEqual(row.transcript, { text: VTT, source: 'inline', truncated: false });
      assert.equal(row.durationSeconds, 5);

      // A replay rebuilds the same row from the same rows.
      for await (const progress of replayProjection('call-history', { eventStore: store, readModels: b.readModels }))
        void progress;
      const replayed = await b.readModels.callHistory.get(teamId, data.callId);
      assert.deepEqual(replayed, row);
    });

    test('new events are stored at their current version, old rows keep theirs', async () => {
      const teamId = `team-${randomUUID()}`;
      const { data, rows } = v1Call(teamId);
      const b = await open(rows);
      const store = b.eventStore;
      const other = submittedData({ teamId });
      const calls = new AggregateRepository(store, callDecider, callEvents);
      await calls.handle(other.callId, { type: 'SubmitCall', data: other });
      await calls.handle(other.callId, { type: 'StartProcessing', timeoutMs: 3_600_000, now: at(1) });
      await calls.handle(other.callId, {
        type: 'RecordTranscript',
        source: 'inline',
        text: 'Rep: hello\nDana: hi',
        truncated: false,
        durationSeconds: 4,
        engine: null,
        now: at(2),
      });
      const [stored] = await store.readStream(callEvents.streamId(other.callId), { fromRevision: 2 });
      assert.equal(stored?.type, 'TranscriptRecorded');
      assert.equal(stored.metadata[SCHEMA_VERSION], 2);
      assert.deepEqual((stored.data as { segments?: Json }).segments, [
        { start: null, end: null, speaker: 'Rep', text: 'hello' },
        { start: null, end: null, speaker: 'Dana', text: 'hi' },
      ]);
      const [old] = await store.readStream(callEvents.streamId(data.callId), { fromRevision: 2 });
      assert.ok(old, 'the old row is there');
      assert.equal(old.metadata[SCHEMA_VERSION], undefined, 'an old row is never rewritten');
      assert.equal((old.data as { segments?: Json }).segments, undefined);
    });

    test('an event that does not decode: the aggregate refuses to load, naming stream, revision and field; the projection stops and says so', async () => {
      const teamId = `team-${randomUUID()}`;
      const { data, rows } = v1Call(teamId);
      const streamId = callEvents.streamId(data.callId);
      const bad: RawEventRow = {
        streamId,
        revision: 3,
        type: 'CallAnalysed',
        data: { ...analysis('Broken'), score: 'very high', at: at(3) } as unknown as Json,
        metadata: {},
      };
      const b = await open([...rows, bad]);
      const store = b.eventStore;

      await assert.rejects(
        new AggregateRepository(store, callDecider, callEvents).load(data.callId),
        (error: unknown) => {
          assert.ok(error instanceof EventDecodeError, String(error));
          assert.equal(error.streamId, streamId);
          assert.equal(error.revision, 3);
          assert.equal(error.type, 'CallAnalysed');
          assert.equal(error.field, '/score');
          assert.match(error.message, new RegExp(`CallAnalysed at revision 3 of stream ${streamId}.*field /score`));
          return true;
        },
      );

      const health = new Health();
      const projections = startProjections({
        eventStore: store,
        eventLog: b.eventLog,
        readModels: b.readModels,
        topics: TOPICS,
        logger: pino({ level: 'silent' }),
        relayCallEvents: false,
        health,
      });
      try {
        const component = await eventually(() => {
          const report = health.report().components['projection:call-history'];
          assert.ok(report && !report.ready, JSON.stringify(health.report()));
          return report;
        });
        assert.match(String(component.reason), /field \/score/);
        assert.equal(health.report().ready, false);
        const status = await eventually(async () => {
          const found = (await projectionStatuses({ eventStore: store, readModels: b.readModels })).find(
            (p) => p.name === 'call-history',
          );
          assert.equal(found?.state, 'stopped', JSON.stringify(found));
          return found;
        });
        assert.equal(status.stoppedOn?.streamId, streamId);
        assert.match(status.stoppedOn?.error ?? '', /revision 3 .*field \/score/);
        // Everything before the bad event was projected; the bad event was not folded.
        const row = await b.readModels.callHistory.get(teamId, data.callId);
        assert.equal(row?.stage, 'analysing');
        assert.equal(row?.analysis, null);
      } finally {
        await projections.stop();
      }
    });
  });
};
