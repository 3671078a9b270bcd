// Values at the edges: extreme numbers, 4-byte characters at every length limit, odd keys.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { accepted, base, refused, refusedWith } from './helpers.ts';
import { MAX_DURATION_SECONDS } from '../../../../shared/domain/submission/duration.ts';
import {
  TRANSCRIPT_MAX_BYTES,
  truncateChars,
  utf8ByteLength,
} from '../../../../shared/domain/submission/truncate-utf8.ts';

const wellFormed = (text: string): boolean => !/[\ud800-\udfff]/u.test(text);

test('deal amounts: 1e-320 and 2^53 − 1 are accepted; 1e308 (past 2^53 − 1) and -1e308 are a 400', () => {
  assert.deepEqual(
    accepted({ ...base, deal: { dealSize: Number.MAX_SAFE_INTEGER, revenueCollected: 1e-320 } }).submission.deal,
    { dealSize: Number.MAX_SAFE_INTEGER, revenueCollected: 1e-320 },
  );
  refusedWith({ ...base, dealSize: 1e308 }, [
    {
      field: 'dealSize',
      message: 'dealSize must be at most 9007199254740991 (2^53 − 1): a larger amount cannot be kept exactly',
    },
  ]);
  refusedWith({ ...base, dealSize: -1e308 }, [{ field: 'dealSize', message: 'dealSize must be ≥ 0' }]);
});

test('-0 is read as 0, so it agrees with an alias that says 0', () => {
  const { submission } = accepted({ ...base, deal: { dealSize: -0 }, deal_size: 0, revenueCollected: '-0' });
  assert.ok(Object.is(submission.deal?.dealSize, 0), 'not -0');
  assert.ok(Object.is(submission.deal?.revenueCollected, 0));
  assert.ok(Object.is(accepted({ ...base, duration: -0 }).submission.duration?.raw, 0));
});

test('a number past the double range (1e999 in the JSON) reaches the normaliser as Infinity and is a 400', () => {
  const body = JSON.parse('{"transcript":"x","dealSize":1e999,"duration":-1e999}') as unknown;
  const fields = refused(body)
    .map((e) => e.field)
    .sort();
  assert.deepEqual(fields, ['dealSize', 'duration']);
});

test('a metadata number past the double range is a 400 naming its key, not stored as null', () => {
  const body = JSON.parse('{"transcript":"x","metadata":{"big":1e400,"small":-1e999,"ok":1.5}}') as unknown;
  assert.deepEqual(
    refused(body).map((e) => e.field),
    ['metadata.big', 'metadata.small'],
  );
  assert.deepEqual(accepted({ ...base, metadata: { fraction: 0.1, tiny: 5e-324 } }).submission.metadata, {
    fraction: 0.1,
    tiny: 5e-324,
  });
});

test('a metadata integer beyond 2^53 − 1 is a 400 naming its key: it cannot be kept exactly; as a string it is', () => {
  // What the JSON says is not what JSON.parse gives: 12345678901234567891 reads as 12345678901234567000.
  const body = JSON.parse(
    '{"transcript":"x","metadata":{"hubspotCallId":12345678901234567891,"low":-9007199254740992,"huge":1e308}}',
  ) as unknown;
  const message = `metadata integers must be within ±9007199254740991 (2^53 − 1): this one cannot be kept exactly; send it as a string`;
  refusedWith(body, [
    { field: 'metadata.hubspotCallId', message },
    { field: 'metadata.low', message },
    { field: 'metadata.huge', message },
  ]);
  const metadata = {
    hubspotCallId: '12345678901234567891',
    max: Number.MAX_SAFE_INTEGER,
    min: Number.MIN_SAFE_INTEGER,
    fraction: 12345.678,
  };
  assert.deepEqual(accepted({ ...base, metadata }).submission.metadata, metadata);
});

test('the normaliser takes a parsed 0 as 0: a literal such as 1e-400 is refused before it, by the body parser', () => {
  // JSON.parse gives 0 for 1e-400; the HTTP body parser refuses such a literal (underflowedNumberPath
  // in services/ingress/json-body.ts), so what reaches the rules as 0 was sent as 0.
  const body = JSON.parse(
    '{"transcript":"x","metadata":{"tiny":1e-400},"dealSize":1e-400,"duration":1e-400}',
  ) as unknown;
  const { submission } = accepted(body);
  assert.deepEqual(submission.metadata, { tiny: 0 });
  assert.equal(submission.deal?.dealSize, 0);
  assert.equal(submission.duration?.seconds, 0);
});

test('duration: 1e-320 is a zero-length call; 1e308 and -1e308 are a 400', () => {
  assert.equal(accepted({ ...base, duration: 1e-320 }).submission.duration?.seconds, 0);
  for (const duration of [1e308, -1e308]) assert.equal(refused({ ...base, duration })[0]?.field, 'duration');
});

test(`duration at most 7 days (${MAX_DURATION_SECONDS} s) once read in its unit; 1e308 minutes never becomes Infinity`, () => {
  assert.equal(
    accepted({ ...base, duration: MAX_DURATION_SECONDS, durationUnit: 'seconds' }).submission.duration?.seconds,
    MAX_DURATION_SECONDS,
  );
  refusedWith({ ...base, duration: MAX_DURATION_SECONDS + 1, durationUnit: 'seconds' }, [
    {
      field: 'duration',
      message: `duration must be at most 7 days (${MAX_DURATION_SECONDS} seconds); ${MAX_DURATION_SECONDS + 1} read as seconds is longer`,
    },
  ]);
  assert.equal(refused({ ...base, duration: 1e308, durationUnit: 'minutes' })[0]?.field, 'duration');
  // By magnitude a large number is milliseconds: 7 days of them are accepted, one more is not.
  assert.equal(
    accepted({ ...base, duration: MAX_DURATION_SECONDS * 1000 }).submission.duration?.seconds,
    MAX_DURATION_SECONDS,
  );
  assert.equal(refused({ ...base, duration: MAX_DURATION_SECONDS * 1000 + 1 })[0]?.field, 'duration');
});

test('tags: 50 characters ending in a 4-byte emoji are accepted, 51 are a 400', () => {
  accepted({ ...base, tags: [`${'t'.repeat(49)}😀`] });
  refusedWith({ ...base, tags: [`${'t'.repeat(50)}😀`] }, [
    { field: 'tags[0]', message: 'each tag at most 50 characters' },
  ]);
});

test('notes and deal notes: 2000 characters ending in a 4-byte emoji are accepted, 2001 are a 400', () => {
  for (const name of ['notes', 'dealNotes']) {
    accepted({ ...base, [name]: `${'n'.repeat(1999)}😀` });
    refusedWith({ ...base, [name]: `${'n'.repeat(2000)}😀` }, [
      { field: name, message: `${name} at most 2000 characters` },
    ]);
  }
});

test('transcript: a 4-byte emoji ending exactly at 512,000 bytes is kept; one byte more drops it whole', () => {
  const at = `${'a'.repeat(TRANSCRIPT_MAX_BYTES - 4)}😀`;
  const kept = accepted({ transcript: at });
  assert.equal(kept.submission.transcript?.text, at);
  assert.deepEqual(kept.warnings, []);
  const over = accepted({ transcript: `b${at}` });
  assert.equal(
    over.submission.transcript?.text,
    `b${'a'.repeat(TRANSCRIPT_MAX_BYTES - 4)}`,
    'the emoji straddling the cut is dropped whole',
  );
  assert.equal(over.submission.transcript?.truncated, true);
  assert.equal(over.warnings.length, 1);
});

test('a transcript of 500 KB of multi-byte characters is cut to at most 512,000 bytes, well formed', () => {
  const transcript = 'Rep: 日本語のテキスト😀 é ü ñ 𝐀 👩‍👩‍👧\n'.repeat(14_000);
  assert.ok(utf8ByteLength(transcript) > TRANSCRIPT_MAX_BYTES);
  const text = accepted({ transcript }).submission.transcript!.text;
  assert.ok(utf8ByteLength(text) <= TRANSCRIPT_MAX_BYTES && utf8ByteLength(text) > TRANSCRIPT_MAX_BYTES - 4);
  assert.ok(wellFormed(text));
  assert.ok(transcript.startsWith(text));
});

test('an unknown field named by a long emoji key is listed cut on a character boundary', () => {
  const name = `${'k'.repeat(99)}😀😀`;
  const { warnings } = accepted({ ...base, [name]: 1, deal: { [name]: 1, dealSize: 1 } });
  assert.equal(warnings.length, 2);
  for (const warning of warnings) assert.ok(wellFormed(warning), warning);
  assert.ok(
    warnings.some((w) => w.includes(`${'k'.repeat(99)}😀`) && !w.includes('😀😀')),
    JSON.stringify(warnings),
  );
});

test('"constructor", "toString" and "hasOwnProperty" are ordinary keys', () => {
  const { submission, warnings } = accepted(
    JSON.parse(
      '{"transcript":"x","constructor":"c","toString":1,"hasOwnProperty":2,"metadata":{"constructor":"m","toString":"t"}}',
    ),
  );
  assert.deepEqual(submission.metadata, { constructor: 'm', toString: 't' });
  assert.equal(warnings.length, 3, 'three unknown top-level fields ignored');
});

test('a duplicate key: the last value wins, as JSON.parse reads it', () => {
  assert.equal(
    accepted(JSON.parse('{"transcript":"first","transcript":"second"}')).submission.transcript?.text,
    'second',
  );
});

test('truncateChars counts code points and never keeps half of a pair', () => {
  assert.equal(truncateChars('ab😀cd', 3), 'ab😀');
  assert.equal(truncateChars('ab😀cd', 2), 'ab');
  assert.equal(truncateChars('😀😀😀', 2), '😀😀');
  assert.equal(truncateChars('short', 10), 'short');
  for (let n = 0; n <= 6; n++) assert.ok(wellFormed(truncateChars('a😀b𝐀c👩‍👩‍👧', n)), `cut at ${n}`);
});
