import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  cleanTranscript,
  countWords,
  parseTranscript,
  splitSentences,
} from '../../../shared/adapters/analysis/transcript-parser.ts';

const turns = (raw: string, hints?: { repName?: string; repEmail?: string }) => {
  const parsed = parseTranscript(raw, hints);
  const names = new Map(parsed.speakers.map((s) => [s.key, s.name]));
  return parsed.utterances.map((u) => [u.speaker === undefined ? null : names.get(u.speaker), u.text]);
};

test('WebVTT: header, NOTE and STYLE blocks, cue ids, timings and cue tags are removed; <v Name> names the speaker', () => {
  const vtt = [
    'WEBVTT - exported by Meet',
    'Kind: captions',
    '',
    'NOTE this file was generated',
    'and spans two lines',
    '',
    'STYLE',
    '::cue { color: white }',
    '',
    'intro',
    '00:00:01.000 --> 00:00:04.000 align:start position:10%',
    '<v Alex Kim>Hi Dana, <i>thanks</i> for joining.</v>',
    '',
    '2',
    '00:00:04.500 --> 00:00:07.000',
    '<v.loud Dana Reyes>Happy to be here &amp; ready.',
    'Let us start.',
    '',
    '00:00:07.000 --> 00:00:09.000',
    '<v Dana Reyes><00:00:07.500>What do you <c.yellow>offer</c>?',
  ].join('\n');
  assert.deepEqual(turns(vtt), [
    ['Alex Kim', 'Hi Dana, thanks for joining.'],
    ['Dana Reyes', 'Happy to be here & ready. Let us start. What do you offer?'],
  ]);
});

test('WebVTT without voice tags but with "Name:" in the cue text', () => {
  const vtt = 'WEBVTT\n\n00:01.000 --> 00:03.000\nRep: Hello there.\n\n00:03.000 --> 00:05.000\nCustomer: Hi.\n';
  assert.deepEqual(turns(vtt), [
    ['Rep', 'Hello there.'],
    ['Customer', 'Hi.'],
  ]);
});

test('SRT: indices and timings are removed, multi-line cues kept, labels read', () => {
  const srt = [
    '1',
    '00:00:01,000 --> 00:00:03,500',
    'Alex: Thanks for taking the call.',
    '',
    '2',
    '00:00:03,600 --> 00:00:06,000',
    'Dana: Sure. We are looking',
    'at a few vendors.',
    '',
    '3',
    '00:00:06,100 --> 00:00:08,000',
    'Dana: Pricing matters most.',
  ].join('\r\n');
  assert.deepEqual(turns(srt), [
    ['Alex', 'Thanks for taking the call.'],
    ['Dana', 'Sure. We are looking at a few vendors. Pricing matters most.'],
  ]);
});

test('SRT without labels is plain text: one turn per line, no speakers', () => {
  const srt = '1\n00:00:01,000 --> 00:00:02,000\nHello there.\n\n2\n00:00:02,000 --> 00:00:03,000\nHow are you?\n';
  const parsed = parseTranscript(srt);
  assert.equal(parsed.speakersKnown, false);
  assert.deepEqual(parsed.speakers, []);
  assert.deepEqual(
    parsed.utterances.map((u) => u.text),
    ['Hello there.', 'How are you?'],
  );
});

test('label forms: "Name:", "Full Name:", "NAME:", "Speaker 1:", "SPEAKER_02:", a company in brackets, bracketed and leading timestamps', () => {
  const raw = [
    '[00:00:01] Dana Reyes: One.',
    'DANA REYES: Two.',
    '00:00:05 Speaker 1: Three.',
    'SPEAKER_02: Four.',
    'Lee (Acme) (00:01:02): Five.',
    '(01:10) Dana Reyes: Six.',
  ].join('\n');
  assert.deepEqual(turns(raw), [
    ['Dana Reyes', 'One. Two.'],
    ['Speaker 1', 'Three.'],
    ['SPEAKER_02', 'Four.'],
    ['Lee', 'Five.'],
    ['Dana Reyes', 'Six.'],
  ]);
});

test('Otter-style header lines ("Name  0:03") name the speaker of the lines below', () => {
  const raw = 'Alex Kim  0:03\nHi Dana.\nHow are you?\n\nDana Reyes  0:09\nGood, thanks.\n';
  assert.deepEqual(turns(raw), [
    ['Alex Kim', 'Hi Dana. How are you?'],
    ['Dana Reyes', 'Good, thanks.'],
  ]);
});

test('an unlabelled line continues the current speaker; consecutive lines of one speaker merge', () => {
  const raw = 'Alex: First line.\nsecond line of Alex\nAlex: third.\nDana: Reply.\n>> Dana: More.\n- Alex: Back.';
  assert.deepEqual(turns(raw), [
    ['Alex', 'First line. second line of Alex third.'],
    ['Dana', 'Reply. More.'],
    ['Alex', 'Back.'],
  ]);
});

test('prose that ends in a colon is not a label: Note:, Next steps:, weekdays, "The Problem:"', () => {
  const raw =
    'Alex: Hello.\nDana: Hi.\nNote: this is Dana still.\nNext steps: send the deck.\nFriday: works.\nThe Problem: none.';
  assert.deepEqual(turns(raw), [
    ['Alex', 'Hello.'],
    ['Dana', 'Hi. Note: this is Dana still. Next steps: send the deck. Friday: works. The Problem: none.'],
  ]);
});

test('plain text: no speakers, every line a turn, the text untouched; a bare 10:30 in prose stays', () => {
  const raw = 'We talked about pricing.\n\n10:30 works for the follow-up.\nNote: they use Salesforce.';
  const parsed = parseTranscript(raw);
  assert.equal(parsed.speakersKnown, false);
  assert.equal(parsed.rep, undefined);
  assert.deepEqual(
    parsed.utterances.map((u) => u.text),
    ['We talked about pricing.', '10:30 works for the follow-up.', 'Note: they use Salesforce.'],
  );
  assert.equal(parsed.totalWords, 15, '10:30 counts as two words, follow-up as two');
});

test('a single label is not enough to know the speakers: the transcript is read as plain text, label kept', () => {
  const parsed = parseTranscript('Rep: Hello?\nAnyone there?');
  assert.equal(parsed.speakersKnown, false);
  assert.deepEqual(
    parsed.utterances.map((u) => u.text),
    ['Rep: Hello?', 'Anyone there?'],
  );
});

test('rep identification, in order: repName (full, first, first word of the label), repEmail, role label, first speaker', () => {
  const cases: { raw: string; hints?: { repName?: string; repEmail?: string }; rep: string; by: string }[] = [
    { raw: 'Dana Reyes: Hi.\nAlex Kim: Hello.', hints: { repName: 'alex kim' }, rep: 'Alex Kim', by: 'rep_name' },
    { raw: 'Dana: Hi.\nAlex: Hello.', hints: { repName: 'Alex Kim' }, rep: 'Alex', by: 'rep_name' },
    { raw: 'Dana: Hi.\nAlex K.: Hello.', hints: { repName: 'Alex Kim' }, rep: 'Alex K.', by: 'rep_name' },
    { raw: 'Dana: Hi.\nJosé: Hello.', hints: { repName: 'Jose Ortiz' }, rep: 'José', by: 'rep_name' },
    { raw: 'Dana: Hi.\nAlex: Hello.', hints: { repEmail: 'alex.kim@acme.io' }, rep: 'Alex', by: 'rep_email' },
    { raw: 'Customer: Hi.\nAgent: Hello.', rep: 'Agent', by: 'role_label' },
    { raw: 'Dana: Hi.\nSales Rep: Hello.', hints: { repName: 'Nobody Here' }, rep: 'Sales Rep', by: 'role_label' },
    { raw: 'Speaker 1: Hi.\nSpeaker 2: Hello.', rep: 'Speaker 1', by: 'first_speaker' },
    { raw: 'Customer: Hi.\nLee: Hello.', rep: 'Lee', by: 'first_speaker' },
  ];
  for (const { raw, hints, rep, by } of cases) {
    const parsed = parseTranscript(raw, hints);
    const found = parsed.speakers.find((s) => s.key === parsed.rep);
    assert.equal(found?.name, rep, raw);
    assert.equal(found?.role, 'rep', raw);
    assert.equal(parsed.repIdentifiedBy, by, raw);
  }
});

test('roles: other speakers are prospects, except a second rep-side role label (unknown); words are counted per speaker', () => {
  const parsed = parseTranscript('Alex: One two three.\nDana: Four five.\nSales Engineer: Six.\nLee: Seven.', {
    repName: 'Alex',
  });
  assert.deepEqual(
    parsed.speakers.map(({ name, role, words, isPersonName }) => ({ name, role, words, isPersonName })),
    [
      { name: 'Alex', role: 'rep', words: 3, isPersonName: true },
      { name: 'Dana', role: 'prospect', words: 2, isPersonName: true },
      { name: 'Sales Engineer', role: 'unknown', words: 1, isPersonName: false },
      { name: 'Lee', role: 'prospect', words: 1, isPersonName: true },
    ],
  );
});

test('cleanTranscript of cues only leaves nothing', () => {
  assert.deepEqual(
    cleanTranscript('WEBVTT\n\n00:00:01.000 --> 00:00:02.000\n\n00:00:02.000 --> 00:00:03.000\n<v Dana></v>\n'),
    { lines: [], labelled: false },
  );
});

test('words and sentences: contractions are one word; a decimal point does not end a sentence; sentences are verbatim slices', () => {
  assert.equal(countWords("don't stop — it's faster, isn’t it?"), 6);
  const line = 'It costs $1.5k per seat. Is that OK?! Sure…  Great';
  const sentences = splitSentences(line);
  assert.deepEqual(sentences, ['It costs $1.5k per seat.', 'Is that OK?!', 'Sure…', 'Great']);
  for (const s of sentences) assert.ok(line.includes(s));
});
