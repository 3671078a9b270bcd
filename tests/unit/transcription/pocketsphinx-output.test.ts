import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parsePocketsphinxOutput } from '../../../shared/adapters/transcription/pocketsphinx-output.ts';

test('5prealpha (pocketsphinx_continuous): one plain hypothesis per utterance, joined in order', () => {
  assert.equal(parsePocketsphinxOutput('hello this is a test of a price proposal\nplease send the contract\n'), 'hello this is a test of a price proposal please send the contract');
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
  assert.equal(parsePocketsphinxOutput('INFO: continuous.c(307): Ready....\nhello there\nWARN: "ps_lattice.c", line 1081: Failed\n'), 'hello there');
});

test('whitespace is normalised: CRLF line ends, runs of spaces', () => {
  assert.equal(parsePocketsphinxOutput('  hello   there \r\n  general  kenobi\r\n'), 'hello there general kenobi');
});
