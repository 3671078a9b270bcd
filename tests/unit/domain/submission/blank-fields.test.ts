/**
 * A field that is `null`, `""` or white space only is read as not sent (README, "White space,
 * blank and trimmed"; field-readers.ts), whatever its type: every top-level name the service
 * knows, every name inside `deal`, and the flat deal aliases. The names come from the schema, so
 * a field added later is held to the rule too. U+FEFF is not white space, so it is a value.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEAL_FIELDS, SUBMISSION_FIELDS } from '../../../../shared/domain/submission/submission-schema.ts';
import { accepted, base, refusedWith } from './helpers.ts';

const BLANKS: unknown[] = [null, '', ' ', '   ', '\t\n\r', '\u00a0\u3000\u2028'];
const AUDIO_URL = 'https://calls.example/a.mp3';

const nothingSent = accepted(base).submission;

for (const name of [...SUBMISSION_FIELDS].filter((field) => field !== 'transcript')) {
  test(`${name}: null, "" and white space only are not sent`, () => {
    for (const blank of BLANKS) {
      const { submission, warnings } = accepted({ ...base, [name]: blank });
      assert.deepEqual(submission, nothingSent, `${name}: ${JSON.stringify(blank)}`);
      assert.deepEqual(warnings, [], `${name}: ${JSON.stringify(blank)}`);
    }
  });
}

test('transcript: blank is not sent, so audioUrl alone carries the call', () => {
  for (const blank of BLANKS) {
    const { submission } = accepted({ transcript: blank, audioUrl: AUDIO_URL });
    assert.equal(submission.transcript, undefined, JSON.stringify(blank));
    assert.equal(submission.audioUrl, AUDIO_URL);
  }
});

for (const name of DEAL_FIELDS) {
  test(`deal.${name}: null, "" and white space only are not sent`, () => {
    for (const blank of BLANKS) {
      const { submission } = accepted({ ...base, deal: { [name]: blank } });
      assert.equal(submission.deal, undefined, `deal.${name}: ${JSON.stringify(blank)}`);
    }
  });
}

test('a blank alias leaves the field to the alias that carries a value', () => {
  for (const blank of BLANKS) {
    const sent = accepted({
      ...base,
      tags: blank,
      callTags: [' demo '],
      metadata: blank,
      deal: blank,
      deal_size: '1200.50',
      dealNotes: blank,
      deal_notes: 'Signed',
    }).submission;
    assert.deepEqual(sent.tags, ['demo'], JSON.stringify(blank));
    assert.deepEqual(sent.metadata, {});
    assert.deepEqual(sent.deal, { dealSize: 1200.5, notes: 'Signed' });
  }
});

test('U+FEFF is not white space: tags, metadata or deal holding it alone is a value of the wrong type', () => {
  refusedWith({ ...base, tags: '\ufeff', call_tags: ' \ufeff ', metadata: '\ufeff', deal: '\ufeff' }, [
    { field: 'tags', message: 'tags must be an array of strings' },
    { field: 'call_tags', message: 'call_tags must be an array of strings' },
    { field: 'metadata', message: 'metadata must be a flat object of key/value pairs' },
    { field: 'deal', message: 'deal must be an object' },
  ]);
});

test('a non-blank string is still refused where an array or an object is wanted', () => {
  refusedWith({ ...base, tags: 'demo', metadata: 'source=zoom', deal: 'big' }, [
    { field: 'tags', message: 'tags must be an array of strings' },
    { field: 'metadata', message: 'metadata must be a flat object of key/value pairs' },
    { field: 'deal', message: 'deal must be an object' },
  ]);
});
