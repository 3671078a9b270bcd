/**
 * What the PostgreSQL fault tests share: the whole pipeline in this process on PostgreSQL (event
 * store, table log and read models, every connection tagged with one application_name so the test
 * can find its own sessions), a steady stream of POSTs and GETs, and the checks and figures every
 * fault run ends with.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { createPostgresEventLog } from '../../../shared/adapters/event-log/sql-event-log.ts';
import { createPostgresEventStore } from '../../../shared/adapters/event-store/postgres-event-store.ts';
import { createPostgresReadModels } from '../../../shared/adapters/read-models/postgres-read-models.ts';
import type { EventLog } from '../../../shared/ports/event-log.ts';
import type { EventStore } from '../../../shared/ports/event-store.ts';
import type { ReadModels } from '../../../shared/ports/read-models.ts';
import { eventually } from '../../support/eventually.ts';
import {
  createPipelineHarness,
  eventData,
  type PipelineHarness,
  type PipelineOptions,
} from '../../support/pipeline-harness.ts';

/** `url` with `application_name` set, so pg_stat_activity shows which sessions are ours. */
export const withApplicationName = (url: string, applicationName: string): string => {
  const parsed = new URL(url);
  parsed.searchParams.set('application_name', applicationName);
  return parsed.toString();
};

export interface PostgresPipeline {
  h: PipelineHarness;
  /** API keys of one team, used in turn (each key allows 30 ingests a minute). */
  keys: string[];
  /** Log lines of the event store (LISTEN lost / restored). */
  storeLog: string[];
  close(): Promise<void>;
}

/** The ingress, processor and projections on PostgreSQL at `connectionString`, in `schema`; `options` of the harness. */
export const startPostgresPipeline = async (
  connectionString: string,
  schema: string,
  keyCount = 12,
  options: PipelineOptions = {},
): Promise<PostgresPipeline> => {
  const storeLog: string[] = [];
  const log = {
    info: (_: object, message: string) => storeLog.push(`info: ${message}`),
    warn: (_: object, message: string) => storeLog.push(`warn: ${message}`),
  };
  const opened: { eventStore?: EventStore; eventLog?: EventLog; readModels?: ReadModels } = {};
  try {
    opened.eventStore = await createPostgresEventStore({ connectionString, schema, pollMs: 100, log });
    opened.eventLog = await createPostgresEventLog({ connectionString, schema });
    opened.readModels = await createPostgresReadModels({ connectionString, schema });
  } catch (error) {
    await opened.readModels?.close();
    await opened.eventLog?.close();
    await opened.eventStore?.close();
    throw error;
  }
  const { eventStore, eventLog, readModels } = opened as Required<typeof opened>;
  const h = await createPipelineHarness(
    { eventStore, eventLog, readModels },
    { retry: { maxAttempts: 8, baseDelayMs: 100, maxDelayMs: 2000 } },
    options,
  );
  const { teamId, key } = await h.team({ capacityHours: 10_000 });
  const keys = [key];
  while (keys.length < keyCount) {
    const issued = await h.admin('POST', `/api/admin/teams/${teamId}/keys`, { label: `load ${keys.length}` });
    assert.equal(issued.statusCode, 201, issued.body);
    keys.push(issued.json<{ key: string }>().key);
  }
  return {
    h,
    keys,
    storeLog,
    async close() {
      await h.close();
      await readModels.close();
      await eventLog.close();
      await eventStore.close();
    },
  };
};

interface Answer {
  kind: 'POST' | 'GET list' | 'GET call';
  status: number;
  retryAfter?: string;
  /** Sent while the test said the backend was out (see `outage`). */
  duringOutage: boolean;
  detail?: string;
}

export interface LoadFigures {
  sent: number;
  created: number;
  unavailable: number;
  other: number;
  gets: { ok: number; unavailable: number; other: number; duringOutage: number; unavailableDuringOutage: number };
}

/**
 * A steady stream: one POST every `postEveryMs` and one GET (alternately the list and the last
 * accepted call) every `getEveryMs`, at most `maxInFlight` at a time. `outage(true|false)` marks
 * the requests sent meanwhile.
 */
export const startLoad = (
  pipeline: PostgresPipeline,
  { postEveryMs = 60, getEveryMs = 100, maxInFlight = 64 } = {},
) => {
  const answers: Answer[] = [];
  const accepted: string[] = [];
  const inFlight = new Set<Promise<void>>();
  let outage = false;
  let turn = 0;
  const send = (kind: Answer['kind'], request: () => Promise<LightMyRequestResponse>) => {
    if (inFlight.size >= maxInFlight) return;
    const duringOutage = outage;
    const done = request()
      .then((res) => {
        const answer: Answer = { kind, status: res.statusCode, duringOutage };
        if (res.headers['retry-after'] !== undefined) answer.retryAfter = String(res.headers['retry-after']);
        // Whole: a "may have been accepted" detail puts the problem's code past 300 characters.
        if (res.statusCode >= 400) answer.detail = res.body.slice(0, 2000);
        if (kind === 'POST' && res.statusCode === 201) accepted.push(res.json<{ callId: string }>().callId);
        answers.push(answer);
      })
      .catch((error: unknown) => void answers.push({ kind, status: -1, duringOutage, detail: String(error) }))
      .finally(() => inFlight.delete(done));
    inFlight.add(done);
  };
  const post = () =>
    send('POST', () =>
      pipeline.h.ingest({
        key: pipeline.keys[turn++ % pipeline.keys.length],
        body: {
          transcript: `Rep: Hello Dana, call ${turn}.\nDana: Hi, what does it cost?\nRep: Let us book a demo next Tuesday.`,
          repName: 'Sam Seller',
        },
      }),
    );
  const get = () => {
    const key = pipeline.keys[turn % pipeline.keys.length]!;
    const last = accepted[accepted.length - 1];
    if (turn % 2 === 0 || !last)
      send('GET list', () =>
        pipeline.h.ingress.app.inject({ method: 'GET', url: '/api/calls?limit=5', headers: { 'x-api-key': key } }),
      );
    else
      send('GET call', () =>
        pipeline.h.ingress.app.inject({ method: 'GET', url: `/api/calls/${last}`, headers: { 'x-api-key': key } }),
      );
  };
  const timers = [setInterval(post, postEveryMs), setInterval(get, getEveryMs)];
  return {
    answers,
    accepted,
    outage(on: boolean) {
      outage = on;
    },
    async stop(): Promise<LoadFigures> {
      for (const timer of timers) clearInterval(timer);
      await Promise.all([...inFlight]);
      const posts = answers.filter((a) => a.kind === 'POST');
      const gets = answers.filter((a) => a.kind !== 'POST');
      return {
        sent: posts.length,
        created: posts.filter((a) => a.status === 201).length,
        unavailable: posts.filter((a) => a.status === 503).length,
        other: posts.filter((a) => a.status !== 201 && a.status !== 503).length,
        gets: {
          ok: gets.filter((a) => a.status === 200 || a.status === 404).length,
          unavailable: gets.filter((a) => a.status === 503).length,
          other: gets.filter((a) => ![200, 404, 503].includes(a.status)).length,
          duringOutage: gets.filter((a) => a.duringOutage).length,
          unavailableDuringOutage: gets.filter((a) => a.duringOutage && a.status === 503).length,
        },
      };
    },
  };
};

/** Every answer is a success, or 503 SERVICE_UNAVAILABLE with Retry-After: never a 500, never anything else. */
export const assertOnlySuccessOr503 = (answers: readonly Answer[]) => {
  const wrong = answers.filter((a) => {
    if (a.kind === 'POST' && a.status === 201) return false;
    if (a.kind !== 'POST' && (a.status === 200 || (a.kind === 'GET call' && a.status === 404))) return false;
    return !(a.status === 503 && Number(a.retryAfter) > 0 && a.detail?.includes('SERVICE_UNAVAILABLE'));
  });
  assert.deepEqual(
    wrong.slice(0, 5).map((a) => `${a.kind} → ${a.status} ${a.detail ?? ''}`),
    [],
    `${wrong.length} answers were neither a success nor a 503 with Retry-After`,
  );
};

/** After the fault: a POST and a GET succeed again (within `timeoutMs`). */
export const assertServesAgain = async (pipeline: PostgresPipeline, timeoutMs = 30_000): Promise<string> => {
  const key = pipeline.keys[0]!;
  return eventually(
    async () => {
      const posted = await pipeline.h.ingest({ key, body: { transcript: 'Rep: After the outage.\nDana: Fine.' } });
      assert.equal(posted.statusCode, 201, posted.body);
      const listed = await pipeline.h.ingress.app.inject({
        method: 'GET',
        url: '/api/calls?limit=1',
        headers: { 'x-api-key': key },
      });
      assert.equal(listed.statusCode, 200, listed.body);
      return posted.json<{ callId: string }>().callId;
    },
    { timeoutMs, intervalMs: 500 },
  );
};

export interface Drained {
  completed: number;
  failedByCode: Record<string, number>;
  missing: string[];
  drainMs: number;
}

/** Waits until every accepted call has CallCompleted or CallFailed in its stream and is no longer pending in the read API. */
export const drain = async (
  pipeline: PostgresPipeline,
  callIds: readonly string[],
  timeoutMs = 90_000,
): Promise<Drained> => {
  const started = Date.now();
  const open = new Set(callIds);
  const failedByCode: Record<string, number> = {};
  let completed = 0;
  const key = pipeline.keys[0]!;
  try {
    await eventually(
      async () => {
        for (const callId of [...open]) {
          const events = await pipeline.h.eventStore.readStream(`call-${callId}`).catch(() => undefined);
          if (!events) continue;
          const failed = eventData(events, 'CallFailed');
          const done = events.some((e) => e.type === 'CallCompleted');
          if (!done && !failed) continue;
          const shown = await pipeline.h.ingress.app.inject({
            method: 'GET',
            url: `/api/calls/${callId}`,
            headers: { 'x-api-key': key },
          });
          if (shown.statusCode !== 200 || shown.json<{ status: string }>().status === 'pending') continue;
          open.delete(callId);
          if (done) completed++;
          else {
            const code = failed?.code ?? 'unknown';
            failedByCode[code] = (failedByCode[code] ?? 0) + 1;
          }
        }
        if (open.size > 0) throw new Error(`${open.size} accepted calls not finished yet`);
      },
      { timeoutMs, intervalMs: 500 },
    );
  } catch {
    // reported through `missing`
  }
  return { completed, failedByCode, missing: [...open], drainMs: Date.now() - started };
};

export const uniqueApplicationName = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;
