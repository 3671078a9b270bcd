import assert from 'node:assert/strict';
import { normaliseSubmission } from '../../../../shared/domain/submission/normalise-submission.ts';
import type { FieldError } from '../../../../shared/domain/submission/submission-schema.ts';
import type { Submission } from '../../../../shared/domain/submission/submission.ts';

/** A body that passes on its own: every test adds the fields it is about. */
export const base = { transcript: 'Hello, this is Dana from Acme.' } as const;

/** Normalises a body that must be accepted. */
export const accepted = (body: unknown): { submission: Submission; warnings: string[] } => {
  const result = normaliseSubmission(body);
  assert.ok(result.ok, `expected the body to be accepted, got ${JSON.stringify(result.ok ? [] : result.errors)}`);
  return result;
};

/** Normalises a body that must be refused; returns every error. */
export const refused = (body: unknown): FieldError[] => {
  const result = normaliseSubmission(body);
  assert.ok(!result.ok, `expected the body to be refused, got ${JSON.stringify(result)}`);
  return result.errors;
};

/** Asserts the body is refused with exactly these errors (in any order). */
export const refusedWith = (body: unknown, expected: FieldError[]): void => {
  const sort = (errors: FieldError[]) =>
    [...errors].sort((a, b) => `${a.field}${a.message}`.localeCompare(`${b.field}${b.message}`));
  assert.deepEqual(sort(refused(body)), sort(expected));
};
