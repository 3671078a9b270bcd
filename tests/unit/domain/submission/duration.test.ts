import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  correctDuration,
  countWords,
  normaliseDuration,
  type DurationBasis,
  type DurationHints,
  type DurationUnit,
  type NormalisedDuration,
} from '../../../../shared/domain/submission/duration.ts';

type Row = {
  name: string;
  raw: unknown;
  hints?: DurationHints;
  seconds: number;
  unit: DurationUnit;
  basis: DurationBasis;
};

const rows: Row[] = [
  // Source hint: the platform's category gives the unit (spec: seconds dialer, minutes meeting, ms CRM).
  {
    name: 'dialer seconds (aircall)',
    raw: 95,
    hints: { source: 'aircall' },
    seconds: 95,
    unit: 'seconds',
    basis: 'source',
  },
  {
    name: 'dialer seconds, source in any case',
    raw: 95,
    hints: { source: 'Dialpad' },
    seconds: 95,
    unit: 'seconds',
    basis: 'source',
  },
  {
    name: 'meeting minutes (zoom)',
    raw: 45,
    hints: { source: 'zoom' },
    seconds: 2700,
    unit: 'minutes',
    basis: 'source',
  },
  {
    name: 'CRM milliseconds (hubspot)',
    raw: 185_000,
    hints: { source: 'hubspot' },
    seconds: 185,
    unit: 'milliseconds',
    basis: 'source',
  },
  {
    name: 'CRM milliseconds under 36 s (hubspot)',
    raw: 20_000,
    hints: { source: 'hubspot' },
    seconds: 20,
    unit: 'milliseconds',
    basis: 'source',
  },
  {
    name: 'implausible hint falls back to magnitude: 300 "ms" would be 0.3 s',
    raw: 300,
    hints: { source: 'salesforce' },
    seconds: 300,
    unit: 'seconds',
    basis: 'magnitude',
  },
  {
    name: 'implausible hint falls back to magnitude: 90,000 dialer "s" is 25 h',
    raw: 90_000,
    hints: { source: 'aircall' },
    seconds: 90,
    unit: 'milliseconds',
    basis: 'magnitude',
  },
  {
    name: 'unknown source: magnitude',
    raw: 45,
    hints: { source: 'acme-dialer' },
    seconds: 45,
    unit: 'seconds',
    basis: 'magnitude',
  },
  // Explicit unit wins over everything.
  {
    name: 'explicit minutes',
    raw: 45,
    hints: { unit: 'minutes', source: 'aircall' },
    seconds: 2700,
    unit: 'minutes',
    basis: 'explicit',
  },
  {
    name: 'explicit milliseconds',
    raw: 45,
    hints: { unit: 'milliseconds' },
    seconds: 0.045,
    unit: 'milliseconds',
    basis: 'explicit',
  },
  {
    name: 'explicit seconds even when huge',
    raw: 90_000,
    hints: { unit: 'seconds' },
    seconds: 90_000,
    unit: 'seconds',
    basis: 'explicit',
  },
  // Magnitude: the ambiguous cases.
  { name: '45 → 45 s', raw: 45, seconds: 45, unit: 'seconds', basis: 'magnitude' },
  { name: '600 → 600 s', raw: 600, seconds: 600, unit: 'seconds', basis: 'magnitude' },
  { name: '3600 → 1 h', raw: 3600, seconds: 3600, unit: 'seconds', basis: 'magnitude' },
  {
    name: '35,999 → seconds (just under the ms threshold)',
    raw: 35_999,
    seconds: 35_999,
    unit: 'seconds',
    basis: 'magnitude',
  },
  {
    name: '36,000 → milliseconds (a 10-hour call is implausible)',
    raw: 36_000,
    seconds: 36,
    unit: 'milliseconds',
    basis: 'magnitude',
  },
  { name: '90,000 → 90 s from milliseconds', raw: 90_000, seconds: 90, unit: 'milliseconds', basis: 'magnitude' },
  { name: '0 → 0 s', raw: 0, seconds: 0, unit: 'seconds', basis: 'magnitude' },
  { name: 'fractional 1.5 → minutes (90 s)', raw: 1.5, seconds: 90, unit: 'minutes', basis: 'magnitude' },
  { name: 'fractional 12.25 → minutes', raw: 12.25, seconds: 735, unit: 'minutes', basis: 'magnitude' },
  {
    name: 'fractional 700.5 → seconds (700 minutes is implausible)',
    raw: 700.5,
    seconds: 700.5,
    unit: 'seconds',
    basis: 'magnitude',
  },
  { name: 'decimal string "300" → 300 s', raw: '300', seconds: 300, unit: 'seconds', basis: 'magnitude' },
  { name: 'decimal string "1.5" → minutes', raw: '1.5', seconds: 90, unit: 'minutes', basis: 'magnitude' },
];

for (const { name, raw, hints, seconds, unit, basis } of rows) {
  test(`duration: ${name}`, () => {
    const result = normaliseDuration(raw, hints);
    assert.ok(result.ok, JSON.stringify(result));
    assert.deepEqual(result.duration, { seconds, unit, basis, raw: Number(raw) });
  });
}

for (const raw of [
  -1,
  -0.5,
  '-5',
  'abc',
  '1,5',
  '1e3',
  '5m',
  ' 300',
  '',
  true,
  null,
  {},
  [60],
  Number.NaN,
  Number.POSITIVE_INFINITY,
]) {
  test(`duration ${JSON.stringify(raw) ?? 'undefined'} is refused (a number ≥ 0 or a plain decimal string)`, () => {
    const result = normaliseDuration(raw, {});
    assert.equal(result.ok, false);
    assert.match(result.ok ? '' : result.message, /duration must be a number ≥ 0/);
  });
}

const read = (raw: number, hints: DurationHints = {}): NormalisedDuration => {
  const result = normaliseDuration(raw, hints);
  assert.ok(result.ok);
  return result.duration;
};

type CorrectionRow = {
  name: string;
  duration: NormalisedDuration;
  evidence: Parameters<typeof correctDuration>[1];
  seconds: number;
  unit: DurationUnit;
  basis: DurationBasis;
};
const corrections: CorrectionRow[] = [
  {
    name: 'meeting minutes read as seconds, audio says 45 min',
    duration: read(45),
    evidence: { audioSeconds: 2712 },
    seconds: 2700,
    unit: 'minutes',
    basis: 'audio',
  },
  {
    name: 'short CRM milliseconds read as seconds, audio says 20 s',
    duration: read(20_000),
    evidence: { audioSeconds: 21 },
    seconds: 20,
    unit: 'milliseconds',
    basis: 'audio',
  },
  {
    name: 'seconds confirmed by audio',
    duration: read(600),
    evidence: { audioSeconds: 590 },
    seconds: 600,
    unit: 'seconds',
    basis: 'audio',
  },
  // 30 minutes at 150 words/minute is 4,500 words; a rough estimate (±2×) still picks minutes.
  {
    name: 'minutes from a transcript of 2,500 words (~17 min)',
    duration: read(30),
    evidence: { transcriptWords: 2500 },
    seconds: 1800,
    unit: 'minutes',
    basis: 'transcript',
  },
  {
    name: 'seconds from a transcript of 300 words (~2 min)',
    duration: read(150, { source: 'zoom' }),
    evidence: { transcriptWords: 300 },
    seconds: 150,
    unit: 'seconds',
    basis: 'transcript',
  },
  {
    name: 'explicit unit is never corrected',
    duration: read(45, { unit: 'seconds' }),
    evidence: { audioSeconds: 2700 },
    seconds: 45,
    unit: 'seconds',
    basis: 'explicit',
  },
  {
    name: 'zero duration stays zero',
    duration: read(0),
    evidence: { audioSeconds: 2700 },
    seconds: 0,
    unit: 'seconds',
    basis: 'magnitude',
  },
  // The cap holds for a corrected length as for a sent one (MAX_DURATION_SECONDS): 256,000 words
  // (~28 h) are nearer 12,000 minutes (8⅓ days, a 400 when sent) than 12,000 seconds.
  {
    name: 'a transcript of ~28 hours never reads 12,000 as minutes (8⅓ days, over the cap)',
    duration: read(12_000),
    evidence: { transcriptWords: 256_000 },
    seconds: 12_000,
    unit: 'seconds',
    basis: 'transcript',
  },
  {
    name: 'audio of 8 days never reads 12,000 as minutes',
    duration: read(12_000),
    evidence: { audioSeconds: 8 * 24 * 3600 },
    seconds: 12_000,
    unit: 'seconds',
    basis: 'audio',
  },
  {
    name: 'the nearest unit within the cap is still picked: 5,000 minutes (~3½ days) from 750,000 words',
    duration: read(5_000),
    evidence: { transcriptWords: 750_000 },
    seconds: 300_000,
    unit: 'minutes',
    basis: 'transcript',
  },
  {
    name: 'a value no unit reads within the cap is left as it is',
    duration: { seconds: 1e9, unit: 'milliseconds', basis: 'magnitude', raw: 1e12 },
    evidence: { audioSeconds: 8 * 24 * 3600 },
    seconds: 1e9,
    unit: 'milliseconds',
    basis: 'magnitude',
  },
  {
    name: 'no evidence (0 words) changes nothing',
    duration: read(45),
    evidence: { transcriptWords: 0 },
    seconds: 45,
    unit: 'seconds',
    basis: 'magnitude',
  },
];

for (const { name, duration, evidence, seconds, unit, basis } of corrections) {
  test(`correction: ${name}`, () => {
    const corrected = correctDuration(duration, evidence);
    assert.deepEqual(
      { seconds: corrected.seconds, unit: corrected.unit, basis: corrected.basis },
      { seconds, unit, basis },
    );
    assert.equal(corrected.raw, duration.raw);
  });
}

test('words are counted across any whitespace', () => {
  assert.equal(countWords('  Hello there,\n\tDana.  How are you? '), 6);
  assert.equal(countWords(''), 0);
});

test('words are counted as splitting on \\s would: every code unit alone and between words, and odd text', () => {
  const bySplit = (text: string) => text.split(/\s+/u).filter((w) => w.length > 0).length;
  for (let unit = 0; unit <= 0xffff; unit++) {
    const char = String.fromCharCode(unit);
    for (const text of [char, `a${char}b`, `${char}${char}x`]) {
      assert.equal(
        countWords(text),
        bySplit(text),
        `U+${unit.toString(16).padStart(4, '0')} in ${JSON.stringify(text)}`,
      );
    }
  }
  const odd = [
    'Rep:\u0000hello\u200bthere\u2028Prospect:\u00a0ok\ufeff',
    '\ud800 lone \udfff surrogates \ud83d\ude00 and a pair',
    '\u3000\u2009thin\u205fand\u1680ogham\u000b\u000c',
    'x'.repeat(10_000),
  ];
  for (const text of odd) assert.equal(countWords(text), bySplit(text), JSON.stringify(text.slice(0, 40)));
});
