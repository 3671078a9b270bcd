import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  parsePocketsphinxOutput,
  readPocketsphinxOutput,
} from '../../../shared/adapters/transcription/pocketsphinx-output.ts';

test('5prealpha (pocketsphinx_continuous): one plain hypothesis per utterance, joined in order', () => {
  assert.equal(
    parsePocketsphinxOutput('hello this is a test of a price proposal\nplease send the contract\n'),
    'hello this is a test of a price proposal please send the contract',
  );
});

test('5.x (pocketsphinx live): the "t" of each JSON line, word segments ignored', () => {
  const stdout = [
    '{"b":0.000,"d":1.520,"p":0.981,"t":"hello this is a test","w":[{"b":0.000,"d":0.400,"p":0.990,"t":"<sil>"},{"b":0.400,"d":0.300,"p":0.990,"t":"hello"}]}',
    '{"b":2.100,"d":0.900,"p":0.870,"t":"of the price proposal","w":[]}',
  ].join('\n');
  assert.equal(parsePocketsphinxOutput(stdout), 'hello this is a test of the price proposal');
});

test('an utterance with nothing recognised ("t": "") adds nothing, and no output is an empty transcript', () => {
  assert.equal(parsePocketsphinxOutput('{"b":0.000,"d":0.010,"p":1.000,"t":"","w":[]}\n'), '');
  assert.equal(parsePocketsphinxOutput(''), '');
  assert.equal(parsePocketsphinxOutput('\n\n  \n'), '');
});

test('a JSON line broken by an unescaped quote in a word still yields its text', () => {
  assert.equal(parsePocketsphinxOutput('{"b":0.0,"d":1.0,"p":0.9,"t":"it is ok","w":[{"t":"a"b"}]}'), 'it is ok');
});

test('silence and noise markers and alternate-pronunciation suffixes are removed', () => {
  assert.equal(parsePocketsphinxOutput('<s> hello(2) [NOISE] there <sil> ++BREATH++ </s>'), 'hello there');
});

test('log lines that reach stdout are not taken for speech', () => {
  assert.equal(
    parsePocketsphinxOutput(
      'INFO: continuous.c(307): Ready....\nhello there\nWARN: "ps_lattice.c", line 1081: Failed\n',
    ),
    'hello there',
  );
});

test('whitespace is normalised: CRLF line ends, runs of spaces', () => {
  assert.equal(parsePocketsphinxOutput('  hello   there \r\n  general  kenobi\r\n'), 'hello there general kenobi');
});

test('5prealpha with -time yes: word lines are not speech; each utterance is a segment from its first to its last spoken word', () => {
  // As pocketsphinx_continuous -time yes printed it for two sentences with a pause between.
  const stdout = [
    'hello this is a test',
    '<s> 0.000 0.020 0.999600',
    'hello 0.030 0.390 0.237600',
    'this 0.400 0.610 0.993719',
    'is 0.620 0.740 0.999900',
    '<sil> 0.820 0.860 0.948849',
    'a(2) 0.870 0.900 0.5',
    'test 0.910 1.220 0.867954',
    '</s> 2.850 3.330 1.000000',
    'please send the contract',
    '<s> 4.750 4.850 0.999500',
    'please 4.860 5.240 0.873790',
    'send 5.250 5.610 0.368905',
    'the 5.620 5.800 1.2e-05',
    'contract 5.910 6.500 0.155592',
    '</s> 7.150 7.580 1.000000',
  ].join('\n');
  assert.deepEqual(readPocketsphinxOutput(stdout), {
    text: 'hello this is a test please send the contract',
    segments: [
      { start: 0.03, end: 1.22, speaker: null, text: 'hello this is a test' },
      { start: 4.86, end: 6.5, speaker: null, text: 'please send the contract' },
    ],
  });
});

test('5.x: the segment of a JSON line spans its spoken words ("b" start, "d" duration); without times it has none', () => {
  const stdout = [
    '{"b":0.000,"d":1.520,"p":0.981,"t":"hello there","w":[{"b":0.000,"d":0.400,"p":0.990,"t":"<sil>"},{"b":0.400,"d":0.300,"p":0.990,"t":"hello"},{"b":0.700,"d":0.500,"p":0.990,"t":"there"}]}',
    '{"b":2.100,"d":0.900,"p":0.870,"t":"","w":[]}',
    'general kenobi',
  ].join('\n');
  assert.deepEqual(readPocketsphinxOutput(stdout).segments, [
    { start: 0.4, end: 1.2, speaker: null, text: 'hello there' },
    { start: null, end: null, speaker: null, text: 'general kenobi' },
  ]);
});
