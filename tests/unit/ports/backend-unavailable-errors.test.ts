/**
 * The four backends' unavailability errors, built from one base: each is a BackendUnavailableError
 * (503 with Retry-After at the edge, retried in place by consumers) with its own name and code,
 * its cause kept, and "may have been accepted" only when said.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EventLogUnavailableError } from '../../../shared/ports/event-log.ts';
import { EventStoreUnavailableError } from '../../../shared/ports/event-store.ts';
import { RateLimiterUnavailableError } from '../../../shared/ports/rate-limiter.ts';
import { ReadModelUnavailableError } from '../../../shared/ports/read-models.ts';
import { BackendUnavailableError, isBackendUnavailable, isRetriableError } from '../../../shared/ports/unavailable.ts';

const cases = [
  [EventLogUnavailableError, 'EventLogUnavailableError', 'EVENT_LOG_UNAVAILABLE'],
  [EventStoreUnavailableError, 'EventStoreUnavailableError', 'EVENT_STORE_UNAVAILABLE'],
  [ReadModelUnavailableError, 'ReadModelUnavailableError', 'READ_MODEL_UNAVAILABLE'],
  [RateLimiterUnavailableError, 'RateLimiterUnavailableError', 'RATE_LIMITER_UNAVAILABLE'],
] as const;

for (const [ErrorClass, name, code] of cases) {
  test(`${name}: a retriable BackendUnavailableError with code ${code}, its cause kept`, () => {
    const cause = new Error('ECONNREFUSED');
    const error = new ErrorClass('cannot reach it', { cause });
    assert.ok(error instanceof ErrorClass && error instanceof BackendUnavailableError && error instanceof Error);
    assert.equal(error.name, name);
    assert.equal(error.code, code);
    assert.equal(error.message, 'cannot reach it');
    assert.equal(error.cause, cause);
    assert.equal(error.retriable, true);
    assert.equal(error.outcomeUnknown, false);
    assert.equal(isBackendUnavailable(error), true);
    assert.equal(isRetriableError(error), true);
    assert.match(String(error.stack), new RegExp(`^${name}: cannot reach it`));
    assert.equal('cause' in new ErrorClass('no cause'), false);
  });
}

test('outcomeUnknown is carried when the publish may have been written', () => {
  assert.equal(new EventLogUnavailableError('timed out', { outcomeUnknown: true }).outcomeUnknown, true);
});

test('the errors of different backends are told apart', () => {
  assert.equal(new EventStoreUnavailableError('x') instanceof EventLogUnavailableError, false);
  assert.equal(new RateLimiterUnavailableError('x') instanceof ReadModelUnavailableError, false);
});
