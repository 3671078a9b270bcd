/**
 * Call events for read-model tests, written to a real event store and read back from its global
 * feed, so the read models see exactly what production gives them.
 */
import { randomUUID } from 'node:crypto';
import { callEvents as callCatalogue, callStreamId } from '../../shared/domain/call/call-catalogue.ts';
import type { CallAnalysis, CallEvent } from '../../shared/domain/call/call-events.ts';
import type { CallSubmittedData } from '../../shared/domain/call/call-submitted.ts';
import type { Deal, Submission } from '../../shared/domain/submission/submission.ts';
import type { EventStore, RecordedEvent } from '../../shared/ports/event-store.ts';
import type { ProjectionWriter } from '../../shared/ports/read-models.ts';
import { segmentsFromText } from '../../shared/domain/transcript/transcript-segments.ts';

/** 2026-11-20T10:00:00Z plus `seconds`. */
export const at = (seconds: number): string =>
  new Date(Date.UTC(2026, 10, 20, 10, 0, 0) + seconds * 1000).toISOString();

export interface CallSpec {
  callId?: string;
  teamId: string;
  submittedAt?: string;
  submission?: Partial<Submission>;
  attributedTo?: CallSubmittedData['attributedTo'];
}

export const submittedData = (spec: CallSpec): CallSubmittedData => ({
  callId: spec.callId ?? randomUUID(),
  teamId: spec.teamId,
  keyId: 'key-1',
  submittedAt: spec.submittedAt ?? at(0),
  submission: {
    aiTitleEnabled: true,
    tags: [],
    metadata: {},
    transcript: { text: 'Rep: hello there. Prospect: hi.', truncated: false, originalBytes: 31 },
    ...spec.submission,
  },
  attributedTo: spec.attributedTo ?? { kind: 'owner', email: 'owner@acme.test', name: 'Olive Owner' },
  capacity: { reservedMinutes: 1, autoRechargedMinutes: 0 },
  warnings: [],
});

export const analysis = (title: string, score = 72): CallAnalysis => ({
  title,
  summary: `Summary of ${title}`,
  score,
  components: [{ name: 'talk_ratio', value: 0.5, score: 80, weight: 1, explanation: 'balanced' }],
  insights: [
    { kind: 'strength', code: 'questions', message: 'Asked good questions', evidence: 'Rep: what matters to you?' },
  ],
  engine: 'built-in',
});

/** The events of each step of processing. */
export const events = {
  submitted: (data: CallSubmittedData): CallEvent => ({ type: 'CallSubmitted', data }),
  started: (mode: 'audio' | 'transcript' = 'transcript', t = 1): CallEvent => ({
    type: 'ProcessingStarted',
    data: { mode, deadline: at(3600), at: at(t) },
  }),
  audioFetched: (t = 2): CallEvent => ({
    type: 'AudioFetched',
    data: { bytes: 1000, contentType: 'audio/wav', at: at(t) },
  }),
  transcript: (text: string, source: 'audio' | 'inline' = 'inline', t = 3): CallEvent => ({
    type: 'TranscriptRecorded',
    data: {
      source,
      text,
      truncated: false,
      durationSeconds: 95,
      engine: null,
      segments: segmentsFromText(text),
      at: at(t),
    },
  }),
  analysed: (title: string, score = 72, t = 4): CallEvent => ({
    type: 'CallAnalysed',
    data: { ...analysis(title, score), at: at(t) },
  }),
  dealRecorded: (deal: Deal, t = 5): CallEvent => ({ type: 'DealRecorded', data: { deal, at: at(t) } }),
  completed: (t = 6): CallEvent => ({ type: 'CallCompleted', data: { durationSeconds: 95, at: at(t) } }),
  failed: (code: string, reason: string, t = 6): CallEvent => ({
    type: 'CallFailed',
    data: { code, reason, at: at(t) },
  }),
  erased: (t = 7): CallEvent => ({ type: 'CallErased', data: { cause: 'deleted', at: at(t) } }),
};

/** Appends a call's events to its stream `call-{callId}`. */
export const appendCall = async (store: EventStore, callId: string, events: CallEvent[]): Promise<void> => {
  await store.append(
    callStreamId(callId),
    events.map((e) => callCatalogue.encode(e)),
  );
};

/** A submitted call, optionally taken through more steps; returns its data. */
export const submitCall = async (
  store: EventStore,
  spec: CallSpec,
  then: CallEvent[] = [],
): Promise<CallSubmittedData> => {
  const data = submittedData(spec);
  await appendCall(store, data.callId, [events.submitted(data), ...then]);
  return data;
};

/** Every event of the feed after `after`, in batches of `batchSize`. */
export const readFeed = async (store: EventStore, after = 0n, batchSize = 500): Promise<RecordedEvent[][]> => {
  const batches: RecordedEvent[][] = [];
  for (let from = after; ;) {
    const batch = await store.readAll({ after: from, maxCount: batchSize });
    if (batch.length === 0) return batches;
    batches.push(batch);
    from = batch[batch.length - 1]!.position;
  }
};

/** Feeds a projection everything after its checkpoint, as a runner would. */
export const catchUp = async (store: EventStore, writer: ProjectionWriter, batchSize = 500): Promise<void> => {
  for (const batch of await readFeed(store, await writer.checkpoint(), batchSize)) {
    await writer.apply(batch, batch[batch.length - 1]!.position);
  }
};
