/**
 * Every retriable unavailability of any backend answers 503 with Retry-After and the
 * SERVICE_UNAVAILABLE problem, on every route; a version conflict that outlives the repository's
 * retries does too. Built on the embedded backends, with one port made to fail.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createSqliteEventLog } from '../../../shared/adapters/event-log/sql-event-log.ts';
import { createSqliteEventStore } from '../../../shared/adapters/event-store/sqlite-event-store.ts';
import { createSqliteReadModels } from '../../../shared/adapters/read-models/sqlite-read-models.ts';
import { openSqlite, type OpenedSqlite } from '../../../shared/adapters/sqlite/sqlite-database.ts';
import { type EventLog, EventLogUnavailableError } from '../../../shared/ports/event-log.ts';
import { type EventStore, ExpectedVersionConflictError } from '../../../shared/ports/event-store.ts';
import { type ReadModels, ReadModelUnavailableError } from '../../../shared/ports/read-models.ts';
import { ALL_TOPICS } from '../../../shared/topics.ts';
import { createHarness, type Harness } from '../../support/ingress-harness.ts';
import { tempDir } from '../../support/temp-dir.ts';

const TRANSCRIPT = 'Rep: Hello Dana, thanks for joining.\nDana: Happy to be here.';

/** Which port fails, switched on per test. */
const faults = { readModels: false, publish: undefined as undefined | { outcomeUnknown: boolean }, teamAppends: false };

const failing = <T extends object>(target: T, overrides: Partial<Record<keyof T, unknown>>): T =>
  new Proxy(target, {
    get(object, property, receiver) {
      if (property in overrides) return overrides[property as keyof T];
      const value = Reflect.get(object, property, receiver) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(object) : value;
    },
  });

const problemOf = (body: string) => JSON.parse(body) as { code: string; status: number; detail: string };

describe('503 + Retry-After for every backend unavailability, never a 500', () => {
  const dir = tempDir();
  let opened: OpenedSqlite;
  let eventStore: EventStore;
  let eventLog: EventLog;
  let readModels: ReadModels;
  let h: Harness;
  let key: string;

  before(async () => {
    opened = openSqlite(dir.path);
    eventStore = createSqliteEventStore(opened.db);
    eventLog = createSqliteEventLog(opened.db);
    await eventLog.ensureTopics(ALL_TOPICS.map((name) => ({ name, partitions: 3 })));
    readModels = createSqliteReadModels(opened.db);
    const unavailable = () => Promise.reject(new ReadModelUnavailableError('read models down (test)'));
    const callHistory = readModels.callHistory;
    const flakyHistory = failing(callHistory, {
      list: (...args: Parameters<typeof callHistory.list>) => (faults.readModels ? unavailable() : callHistory.list(...args)),
      get: (...args: Parameters<typeof callHistory.get>) => (faults.readModels ? unavailable() : callHistory.get(...args)),
    });
    const flakyLog = failing(eventLog, {
      publish: (...args: Parameters<EventLog['publish']>) =>
        faults.publish
          ? Promise.reject(new EventLogUnavailableError('produce timed out (test)', { outcomeUnknown: faults.publish.outcomeUnknown }))
          : eventLog.publish(...args),
    });
    const flakyStore = failing(eventStore, {
      append: (...args: Parameters<EventStore['append']>) =>
        faults.teamAppends && args[0].startsWith('team-') ? Promise.reject(new ExpectedVersionConflictError(args[0], 3, 5)) : eventStore.append(...args),
    });
    h = await createHarness({ eventStore: flakyStore, eventLog: flakyLog, readModels: { ...readModels, callHistory: flakyHistory } });
    ({ key } = await h.team());
  });

  after(async () => {
    await h.close();
    await readModels.close();
    await eventLog.close();
    await eventStore.close();
    opened.close();
    dir.remove();
  });

  const expect503 = (res: { statusCode: number; headers: Record<string, unknown>; body: string }) => {
    assert.equal(res.statusCode, 503, res.body);
    assert.ok(Number(res.headers['retry-after']) > 0, 'Retry-After is a positive number of seconds');
    assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
    const body = problemOf(res.body);
    assert.equal(body.code, 'SERVICE_UNAVAILABLE');
    assert.equal(body.status, 503);
    return body;
  };

  test('GET /api/calls and GET /api/calls/:id answer 503 while the read models are unavailable, 200/404 again after', async () => {
    faults.readModels = true;
    try {
      expect503(await h.ingress.app.inject({ method: 'GET', url: '/api/calls', headers: { 'x-api-key': key } }));
      expect503(await h.ingress.app.inject({ method: 'GET', url: '/api/calls/some-call', headers: { 'x-api-key': key } }));
    } finally {
      faults.readModels = false;
    }
    assert.equal((await h.ingress.app.inject({ method: 'GET', url: '/api/calls', headers: { 'x-api-key': key } })).statusCode, 200);
    assert.equal((await h.ingress.app.inject({ method: 'GET', url: '/api/calls/some-call', headers: { 'x-api-key': key } })).statusCode, 404);
  });

  test('a publish that surely failed says nothing was accepted', async () => {
    faults.publish = { outcomeUnknown: false };
    try {
      const body = expect503(await h.ingest({ key, body: { transcript: TRANSCRIPT } }));
      assert.match(body.detail, /nothing was accepted/);
    } finally {
      faults.publish = undefined;
    }
  });

  test('a publish whose outcome is unknown says the call may have been accepted and to retry with the same Idempotency-Key', async () => {
    faults.publish = { outcomeUnknown: true };
    try {
      const body = expect503(await h.ingest({ key, body: { transcript: TRANSCRIPT } }));
      assert.match(body.detail, /may have been accepted/);
      assert.match(body.detail, /same Idempotency-Key/);
      assert.doesNotMatch(body.detail, /nothing was accepted/);
    } finally {
      faults.publish = undefined;
    }
  });

  test('a version conflict on the team stream that outlives every retry answers 503, not 500', async () => {
    faults.teamAppends = true;
    try {
      expect503(await h.ingest({ key, body: { transcript: TRANSCRIPT } }));
    } finally {
      faults.teamAppends = false;
    }
    assert.equal((await h.ingest({ key, body: { transcript: TRANSCRIPT } })).statusCode, 201);
  });
});
