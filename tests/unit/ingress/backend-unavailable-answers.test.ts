/**
 * Every retriable unavailability of any backend answers 503 with Retry-After and the
 * SERVICE_UNAVAILABLE problem, on every route; a version conflict that outlives the repository's
 * retries does too. Built on the embedded backends, with one port made to fail.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type EventLog, EventLogUnavailableError } from '../../../shared/ports/event-log.ts';
import { type EventStore, ExpectedVersionConflictError } from '../../../shared/ports/event-store.ts';
import { ReadModelUnavailableError } from '../../../shared/ports/read-models.ts';
import { type EmbeddedIngress, openEmbeddedIngress, overriding } from '../../support/embedded-ingress.ts';
import type { Harness } from '../../support/ingress-harness.ts';

const TRANSCRIPT = 'Rep: Hello Dana, thanks for joining.\nDana: Happy to be here.';

/** Which port fails, switched on per test. */
const faults = { readModels: false, publish: undefined as undefined | { outcomeUnknown: boolean }, teamAppends: false };

const problemOf = (body: string) => JSON.parse(body) as { code: string; status: number; detail: string };

describe('503 + Retry-After for every backend unavailability, never a 500', () => {
  let embedded: EmbeddedIngress;
  let h: Harness;
  let key: string;

  before(async () => {
    embedded = await openEmbeddedIngress(({ eventStore, eventLog, readModels }) => {
      const unavailable = () => Promise.reject(new ReadModelUnavailableError('read models down (test)'));
      const callHistory = readModels.callHistory;
      const flakyHistory = overriding(callHistory, {
        list: (...args: Parameters<typeof callHistory.list>) =>
          faults.readModels ? unavailable() : callHistory.list(...args),
        get: (...args: Parameters<typeof callHistory.get>) =>
          faults.readModels ? unavailable() : callHistory.get(...args),
      });
      return {
        eventLog: overriding(eventLog, {
          publish: (...args: Parameters<EventLog['publish']>) =>
            faults.publish
              ? Promise.reject(
                  new EventLogUnavailableError('produce timed out (test)', {
                    outcomeUnknown: faults.publish.outcomeUnknown,
                  }),
                )
              : eventLog.publish(...args),
        }),
        eventStore: overriding(eventStore, {
          append: (...args: Parameters<EventStore['append']>) =>
            faults.teamAppends && args[0].startsWith('team-')
              ? Promise.reject(new ExpectedVersionConflictError(args[0], 3, 5))
              : eventStore.append(...args),
        }),
        readModels: { ...readModels, callHistory: flakyHistory },
      };
    });
    h = embedded.h;
    ({ key } = await h.team());
  });

  after(() => embedded.close());

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
      expect503(
        await h.ingress.app.inject({ method: 'GET', url: '/api/calls/some-call', headers: { 'x-api-key': key } }),
      );
    } finally {
      faults.readModels = false;
    }
    assert.equal(
      (await h.ingress.app.inject({ method: 'GET', url: '/api/calls', headers: { 'x-api-key': key } })).statusCode,
      200,
    );
    assert.equal(
      (await h.ingress.app.inject({ method: 'GET', url: '/api/calls/some-call', headers: { 'x-api-key': key } }))
        .statusCode,
      404,
    );
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
