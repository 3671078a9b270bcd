import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  boundSegments,
  SEGMENT_LIMITS,
  segmentsAreTimed,
  segmentsFromText,
} from '../../../../shared/domain/transcript/transcript-segments.ts';
import { renderSrt, renderText, renderVtt } from '../../../../shared/domain/transcript/transcript-export.ts';

test('WebVTT: each cue is a segment with its times; <v Name> names the speaker; multi-line cues keep their lines; header, NOTE and cue ids go', () => {
  const vtt = [
    'WEBVTT - call with Dana',
    '',
    'NOTE recorded by the dialer',
    '',
    'intro',
    '00:00:01.000 --> 00:00:04.250 align:start position:10%',
    '<v Sam Seller>Hi Dana, thanks for joining.',
    'How is the quarter going?',
    '',
    '00:00:04.500 --> 00:00:07.000',
    '<v Dana><i>Busy</i> &amp; good.</v>',
    '',
  ].join('\n');
  assert.deepEqual(segmentsFromText(vtt), [
    { start: 1, end: 4.25, speaker: 'Sam Seller', text: 'Hi Dana, thanks for joining.\nHow is the quarter going?' },
    { start: 4.5, end: 7, speaker: 'Dana', text: 'Busy & good.' },
  ]);
});

test('WebVTT timestamps with and without hours, and hours past 99', () => {
  const vtt =
    'WEBVTT\n\n00:59.5 --> 01:02.125\nfirst\n\n01:00:00.000 --> 01:00:01.000\nsecond\n\n100:00:00.000 --> 100:00:02.000\nthird\n';
  assert.deepEqual(segmentsFromText(vtt), [
    { start: 59.5, end: 62.125, speaker: null, text: 'first' },
    { start: 3600, end: 3601, speaker: null, text: 'second' },
    { start: 360000, end: 360002, speaker: null, text: 'third' },
  ]);
});

test('a <v Name> span names the speaker even when only one speaker is in the file', () => {
  assert.deepEqual(segmentsFromText('WEBVTT\n\n00:00:00.000 --> 00:00:02.000\n<v Dana>Hello there\n'), [
    { start: 0, end: 2, speaker: 'Dana', text: 'Hello there' },
  ]);
});

test('SRT: index and timing lines go, comma milliseconds are read, "Name:" labels name speakers, multi-line cues keep their lines', () => {
  const srt = [
    '1',
    '00:00:01,000 --> 00:00:03,500',
    'Rep: Hi Dana, thanks for joining.',
    '',
    '2',
    '00:00:03,600 --> 00:00:06,000',
    'Dana: Happy to be here.',
    'We have ten minutes.',
    '',
    '3',
    '01:02:03,004 --> 01:02:05,000',
    '<i>Rep: Great.</i>',
    '',
  ].join('\r\n');
  assert.deepEqual(segmentsFromText(srt), [
    { start: 1, end: 3.5, speaker: 'Rep', text: 'Hi Dana, thanks for joining.' },
    { start: 3.6, end: 6, speaker: 'Dana', text: 'Happy to be here.\nWe have ten minutes.' },
    { start: 3723.004, end: 3725, speaker: 'Rep', text: 'Great.' },
  ]);
});

test('a speaker change inside one cue starts another segment with the same times', () => {
  const srt = '1\n00:00:01,000 --> 00:00:03,000\nRep: Ready?\nDana: Yes.\n';
  assert.deepEqual(segmentsFromText(srt), [
    { start: 1, end: 3, speaker: 'Rep', text: 'Ready?' },
    { start: 1, end: 3, speaker: 'Dana', text: 'Yes.' },
  ]);
});

test('"Speaker: text" lines: one segment a line, the speaker named, no times; an unlabelled line continues the speaker', () => {
  assert.deepEqual(segmentsFromText('Rep: Hi Dana.\nDana: Hi Sam.\nWe use spreadsheets.\n\nRep: Got it.'), [
    { start: null, end: null, speaker: 'Rep', text: 'Hi Dana.' },
    { start: null, end: null, speaker: 'Dana', text: 'Hi Sam.' },
    { start: null, end: null, speaker: 'Dana', text: 'We use spreadsheets.' },
    { start: null, end: null, speaker: 'Rep', text: 'Got it.' },
  ]);
});

test('plain text, or a single label (which says nothing about who spoke): one segment a line, no speaker', () => {
  assert.deepEqual(segmentsFromText('hello this is a test\n\nNote: send the contract'), [
    { start: null, end: null, speaker: null, text: 'hello this is a test' },
    { start: null, end: null, speaker: null, text: 'Note: send the contract' },
  ]);
  assert.deepEqual(segmentsFromText(''), []);
});

test('segmentsAreTimed: true only when every segment has both times', () => {
  assert.equal(segmentsAreTimed(segmentsFromText('WEBVTT\n\n00:01.000 --> 00:02.000\nhi\n')), true);
  assert.equal(segmentsAreTimed(segmentsFromText('Rep: hi\nDana: hello')), false);
  assert.equal(segmentsAreTimed([]), true);
});

test('boundSegments: times rounded to the ms, negative or non-finite times null, an end before its start moved to it, blank text dropped, blank speaker null', () => {
  assert.deepEqual(
    boundSegments([
      { start: 1.23456, end: 0.5, speaker: '  ', text: ' a ' },
      { start: -1, end: 2, speaker: 'Dana', text: 'b' },
      { start: Number.NaN, end: Number.POSITIVE_INFINITY, speaker: null, text: 'c' },
      { start: 1, end: 2, speaker: 'Rep', text: '   ' },
    ]),
    [
      { start: 1.235, end: 1.235, speaker: null, text: 'a' },
      { start: null, end: null, speaker: 'Dana', text: 'b' },
      { start: null, end: null, speaker: null, text: 'c' },
    ],
  );
});

test(`boundSegments: at most ${SEGMENT_LIMITS.maxSegments} segments (the last holding the rest), ${SEGMENT_LIMITS.maxTextBytes} bytes of text in all (cut on a character boundary), speakers of ${SEGMENT_LIMITS.maxSpeakerChars} characters`, () => {
  const many = Array.from({ length: SEGMENT_LIMITS.maxSegments + 5 }, (_, i) => ({
    start: i,
    end: i + 1,
    speaker: null,
    text: 'x',
  }));
  const counted = boundSegments(many);
  assert.equal(counted.length, SEGMENT_LIMITS.maxSegments);
  // Nothing is cut at the count: the last segment holds the rest, from its start to the latest end.
  assert.deepEqual(counted.at(-1), {
    start: SEGMENT_LIMITS.maxSegments - 1,
    end: SEGMENT_LIMITS.maxSegments + 5,
    speaker: null,
    text: Array.from({ length: 6 }, () => 'x').join('\n'),
  });

  const big = 'é'.repeat(200_000); // 400,000 bytes each
  const cut = boundSegments([
    { start: 0, end: 1, speaker: null, text: big },
    { start: 1, end: 2, speaker: null, text: big },
    { start: 2, end: 3, speaker: null, text: 'never reached' },
  ]);
  assert.deepEqual(
    cut.map((s) => Buffer.byteLength(s.text)),
    [400_000, SEGMENT_LIMITS.maxTextBytes - 400_000],
  );

  const [named] = boundSegments([{ start: null, end: null, speaker: '😀'.repeat(150), text: 'hi' }]);
  assert.equal(named!.speaker, '😀'.repeat(SEGMENT_LIMITS.maxSpeakerChars));
});

/** `n` lines of `Speaker: text`, Rep and Dana in turn. */
const speakerLines = (n: number): string =>
  Array.from({ length: n }, (_, i) => `${i % 2 ? 'Dana' : 'Rep'}: line ${i}`).join('\n');

test(`past ${SEGMENT_LIMITS.maxSegments} lines nothing is lost: the last segment holds the rest as Speaker: lines, and the text export writes every line`, () => {
  for (const n of [SEGMENT_LIMITS.maxSegments, SEGMENT_LIMITS.maxSegments + 1, 30_000]) {
    const text = speakerLines(n);
    const segments = segmentsFromText(text);
    assert.equal(segments.length, Math.min(n, SEGMENT_LIMITS.maxSegments), `${n} lines`);
    assert.equal(renderText(segments), `${text}\n`, `${n} lines: the text export is the transcript`);
  }
  const last = segmentsFromText(speakerLines(SEGMENT_LIMITS.maxSegments + 1)).at(-1);
  assert.deepEqual(last, { start: null, end: null, speaker: null, text: 'Dana: line 19999\nRep: line 20000' });
});

test('the rest of one speaker keeps that speaker, and its lines carry no label', () => {
  const many = Array.from({ length: SEGMENT_LIMITS.maxSegments + 2 }, (_, i) => ({
    start: null,
    end: null,
    speaker: 'Dana',
    text: `line ${i}`,
  }));
  assert.deepEqual(boundSegments(many).at(-1), {
    start: null,
    end: null,
    speaker: 'Dana',
    text: 'line 19999\nline 20000\nline 20001',
  });
});

test('a timed transcript past the bound: the last cue runs to the end, and SubRip and WebVTT write every line', () => {
  const n = SEGMENT_LIMITS.maxSegments + 2;
  const vtt = `WEBVTT\n\n${Array.from(
    { length: n },
    (_, i) =>
      `00:00:${String(i % 60).padStart(2, '0')}.000 --> 00:00:${String(i % 60).padStart(2, '0')}.500\n<v ${i % 2 ? 'Dana' : 'Rep'}>cue ${i}\n`,
  ).join('\n')}`;
  const segments = segmentsFromText(vtt);
  assert.equal(segments.length, SEGMENT_LIMITS.maxSegments);
  assert.ok(segmentsAreTimed(segments));
  const last = segments.at(-1)!;
  assert.equal(last.text, 'Dana: cue 19999\nRep: cue 20000\nDana: cue 20001');
  assert.deepEqual([last.start, last.end], [19, 21.5], 'from cue 19999 to the end of cue 20001');
  for (const written of [renderSrt(segments), renderVtt(segments), renderText(segments)])
    for (const i of [0, 19_998, 19_999, 20_000, 20_001]) assert.ok(written.includes(`cue ${i}\n`), `cue ${i}`);
});

test('segments keep U+FEFF: it is not white space (shared/domain/white-space.ts), so it is never trimmed and never blank', () => {
  const segments = boundSegments([
    { start: 0, end: 1, speaker: '\ufeffDana ', text: ' \ufeffhello\ufeff ' },
    { start: 1, end: 2, speaker: null, text: '\ufeff' },
    { start: 2, end: 3, speaker: null, text: ' \u3000\t' },
  ]);
  assert.deepEqual(segments, [
    { start: 0, end: 1, speaker: '\ufeffDana', text: '\ufeffhello\ufeff' },
    { start: 1, end: 2, speaker: null, text: '\ufeff' },
  ]);
  assert.equal(renderText(segments), '\ufeffDana: \ufeffhello\ufeff\n\ufeff\n');
  assert.ok(renderSrt(segments).endsWith('2\n00:00:01,000 --> 00:00:02,000\n\ufeff\n'));
  assert.ok(renderVtt(segments).endsWith('00:00:01.000 --> 00:00:02.000\n\ufeff\n'));
});

test('only an empty line ends a cue: a line of U+00A0 or U+2028 alone is no text, and its cue goes on', () => {
  const vtt = 'WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nalpha\n\u00a0\nbeta\n\u2028\ngamma';
  assert.deepEqual(segmentsFromText(vtt), [{ start: 1, end: 2, speaker: null, text: 'alpha\nbeta\ngamma' }]);
});
