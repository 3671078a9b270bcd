import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderSrt, renderText, renderVtt } from '../../../../shared/domain/transcript/transcript-export.ts';
import { segmentsFromText, type TranscriptSegment } from '../../../../shared/domain/transcript/transcript-segments.ts';

const timed: TranscriptSegment[] = [
  { start: 1, end: 4.25, speaker: 'Sam Seller', text: 'Hi Dana, thanks for joining.\nHow is the quarter going?' },
  { start: 4.5, end: 7.0005, speaker: 'Dana', text: 'Busy & <good>.' },
  { start: 3723.004, end: 3725, speaker: null, text: 'bye' },
];

test('SubRip: numbered cues, HH:MM:SS,mmm, the speaker as "Speaker: ", a blank line between cues', () => {
  assert.equal(
    renderSrt(timed),
    [
      '1',
      '00:00:01,000 --> 00:00:04,250',
      'Sam Seller: Hi Dana, thanks for joining.',
      'How is the quarter going?',
      '',
      '2',
      '00:00:04,500 --> 00:00:07,001',
      'Dana: Busy & <good>.',
      '',
      '3',
      '01:02:03,004 --> 01:02:05,000',
      'bye',
      '',
    ].join('\n'),
  );
});

test('WebVTT: the header, HH:MM:SS.mmm, <v Speaker> voice spans, & < > as entities', () => {
  assert.equal(
    renderVtt(timed),
    [
      'WEBVTT',
      '',
      '00:00:01.000 --> 00:00:04.250',
      '<v Sam Seller>Hi Dana, thanks for joining.',
      'How is the quarter going?',
      '',
      '00:00:04.500 --> 00:00:07.001',
      '<v Dana>Busy &amp; &lt;good&gt;.',
      '',
      '01:02:03.004 --> 01:02:05.000',
      'bye',
      '',
    ].join('\n'),
  );
  assert.equal(renderVtt([]), 'WEBVTT\n');
});

test('plain text: "Speaker: " when known, one segment a line, a final line break', () => {
  assert.equal(
    renderText(timed),
    'Sam Seller: Hi Dana, thanks for joining.\nHow is the quarter going?\nDana: Busy & <good>.\nbye\n',
  );
  assert.equal(renderText([{ start: null, end: null, speaker: null, text: 'hello there' }]), 'hello there\n');
  assert.equal(renderText([]), '');
});

test('a blank line inside a segment never ends its cue early', () => {
  assert.equal(
    renderSrt([{ start: 0, end: 1, speaker: null, text: 'one\n\ntwo' }]),
    '1\n00:00:00,000 --> 00:00:01,000\none\ntwo\n',
  );
});

test('SubRip and WebVTT refuse segments without times', () => {
  const untimed = [{ start: null, end: null, speaker: 'Rep', text: 'hi' }];
  assert.throws(() => renderSrt(untimed), RangeError);
  assert.throws(() => renderVtt(untimed), RangeError);
});

test('round trip: segments written as SubRip, WebVTT or text read back as the same segments', () => {
  const segments: TranscriptSegment[] = [
    { start: 0.5, end: 2, speaker: 'Rep', text: 'Hi Dana & team, ready?\nLet us start.' },
    { start: 2.25, end: 5.5, speaker: 'Dana', text: 'Yes <finally>.' },
    { start: 3661.001, end: 3662, speaker: 'Rep', text: 'Great.' },
  ];
  assert.deepEqual(segmentsFromText(renderVtt(segments)), segments);
  assert.deepEqual(segmentsFromText(renderSrt(segments)), segments);
  const untimed = segments.map((s) => ({ ...s, start: null, end: null }));
  // Text has no cues: each line is its own segment, the speaker carried on to an unlabelled line.
  assert.deepEqual(segmentsFromText(renderText(untimed)), [
    { start: null, end: null, speaker: 'Rep', text: 'Hi Dana & team, ready?' },
    { start: null, end: null, speaker: 'Rep', text: 'Let us start.' },
    { start: null, end: null, speaker: 'Dana', text: 'Yes <finally>.' },
    { start: null, end: null, speaker: 'Rep', text: 'Great.' },
  ]);
});

test("WebVTT: a speaker whose name ends in '-' keeps its voice span whole (no `-->` in it), read back as the name", () => {
  const segments: TranscriptSegment[] = [
    { start: 1, end: 2, speaker: 'Dana--', text: 'the price is fine' },
    { start: 3, end: 4, speaker: 'Sam', text: 'great' },
  ];
  const vtt = renderVtt(segments);
  assert.ok(vtt.includes('<v Dana-- >the price is fine'), vtt);
  assert.ok(!vtt.split('\n').some((line) => line.includes('-->') && !/^\d\d:\d\d:\d\d\.\d{3} --> /.test(line)), vtt);
  assert.deepEqual(segmentsFromText(vtt), segments);
});

test("SubRip: `-->` in a cue's text is written `-- >`, so no reader takes the line for a cue's timing", () => {
  const srt = renderSrt([{ start: 1, end: 2, speaker: null, text: '2\n10000:00:02,000 --> 10000:00:03,000' }]);
  assert.equal(srt, '1\n00:00:01,000 --> 00:00:02,000\n2\n10000:00:02,000 -- > 10000:00:03,000\n');
});

test('timed formats: cues in order of start, each ending at least a millisecond after it starts', () => {
  const segments: TranscriptSegment[] = [
    { start: 5, end: 5, speaker: null, text: 'instant' },
    { start: 2, end: 1, speaker: null, text: 'reversed' },
    { start: 0, end: 1, speaker: null, text: 'first' },
  ];
  assert.equal(
    renderVtt(segments),
    [
      'WEBVTT',
      '',
      '00:00:00.000 --> 00:00:01.000',
      'first',
      '',
      '00:00:02.000 --> 00:00:02.001',
      'reversed',
      '',
      '00:00:05.000 --> 00:00:05.001',
      'instant',
      '',
    ].join('\n'),
  );
  assert.match(
    renderSrt(segments),
    /^1\n00:00:00,000 --> 00:00:01,000\nfirst\n\n2\n00:00:02,000 --> 00:00:02,001\nreversed\n/,
  );
});
