import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FormatRegistry } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import {
  DEAL_FIELDS,
  ProblemSchema,
  SUBMISSION_FIELDS,
  SubmissionAcceptedSchema,
  SubmissionBodySchema,
} from '../../../../shared/domain/submission/submission-schema.ts';
import { accepted } from './helpers.ts';

// TypeBox checks no format it does not know; register the two the body documents.
FormatRegistry.Set('uri', (value) => URL.canParse(value));
FormatRegistry.Set('email', (value) => /^[^\s@]+@[^\s@]+$/.test(value));

test('the body schema documents every field and alias of the spec, and no other', () => {
  assert.deepEqual([...SUBMISSION_FIELDS].sort(), [
    'audioUrl',
    'audio_url',
    'callDate',
    'callNotes',
    'callTags',
    'callTitle',
    'call_date',
    'call_notes',
    'call_tags',
    'call_title',
    'deal',
    'dealDate',
    'dealNotes',
    'dealSize',
    'deal_date',
    'deal_notes',
    'deal_size',
    'disableAiTitleGeneration',
    'disable_ai_title_generation',
    'duration',
    'durationUnit',
    'duration_unit',
    'metadata',
    'notes',
    'repEmail',
    'repName',
    'rep_email',
    'rep_name',
    'revenueCollected',
    'revenue_collected',
    'tags',
    'transcript',
    'useAiCallTitle',
    'use_ai_call_title',
  ]);
  assert.deepEqual([...DEAL_FIELDS].sort(), [
    'dealDate',
    'dealSize',
    'deal_date',
    'deal_size',
    'notes',
    'revenueCollected',
    'revenue_collected',
  ]);
});

test('every documented field has a description (it becomes the OpenAPI document)', () => {
  for (const [name, schema] of Object.entries(SubmissionBodySchema.properties)) {
    assert.ok(typeof (schema as { description?: unknown }).description === 'string', `${name} has no description`);
  }
});

test('the schema documents the limits the normaliser enforces', () => {
  const { tags, notes, metadata } = SubmissionBodySchema.properties;
  assert.equal(tags.maxItems, 20);
  assert.equal(tags.items.maxLength, 50);
  assert.equal(notes.maxLength, 2000);
  assert.equal(metadata.maxProperties, 20);
  assert.equal(
    SubmissionBodySchema.additionalProperties,
    true,
    'unknown fields are ignored with a warning, not refused',
  );
});

test('bodies the normaliser accepts also satisfy the documented schema', () => {
  const bodies = [
    { transcript: 'Hi' },
    {
      audio_url: 'https://x.example/a.mp3',
      rep_email: 'dana@acme.io',
      call_tags: ['a'],
      use_ai_call_title: 'false',
      duration: '90',
      duration_unit: 'seconds',
    },
    {
      transcript: 'Hi',
      deal: { deal_size: '1200.50', dealDate: '2026-11-20', notes: 'n' },
      revenueCollected: 3,
      metadata: { source: 'zoom', n: 1, b: true, z: null },
      extra: 1,
    },
  ];
  for (const body of bodies) {
    accepted(body);
    assert.ok(
      Value.Check(SubmissionBodySchema, body),
      JSON.stringify([...Value.Errors(SubmissionBodySchema, body)].map((e) => `${e.path} ${e.message}`)),
    );
  }
});

test('the 201 body schema: callId, status pending, processingTriggered, processingError, statusReason, warnings', () => {
  const body = {
    callId: 'c1',
    status: 'pending',
    processingTriggered: true,
    processingError: null,
    statusReason: 'queued',
    warnings: [],
  };
  assert.ok(Value.Check(SubmissionAcceptedSchema, body));
  assert.ok(
    Value.Check(SubmissionAcceptedSchema, { ...body, processingTriggered: false, processingError: 'log unavailable' }),
  );
  assert.ok(!Value.Check(SubmissionAcceptedSchema, { ...body, status: 'completed' }));
  assert.ok(!Value.Check(SubmissionAcceptedSchema, { ...body, warnings: undefined }));
});

test('the problem body schema is RFC 9457 plus code and errors', () => {
  const problem = {
    type: 'https://errors.example/validation',
    title: 'Invalid request',
    status: 400,
    detail: '1 invalid field',
    code: 'VALIDATION_FAILED',
    errors: [{ field: 'call_tags[3]', message: 'each tag at most 50 characters' }],
  };
  assert.ok(Value.Check(ProblemSchema, problem));
  assert.ok(Value.Check(ProblemSchema, { ...problem, status: 402, code: 'CAPACITY_EXHAUSTED', errors: undefined }));
  assert.ok(!Value.Check(ProblemSchema, { ...problem, status: 200 }));
  assert.ok(!Value.Check(ProblemSchema, { ...problem, errors: [{ field: 'x' }] }));
});
