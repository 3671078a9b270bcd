// Titles and evidence quotes are cut in characters (code points): never inside a surrogate pair.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { analyseTranscript } from '../../../shared/adapters/analysis/conversation-analyser.ts';
import { MAX_TITLE_CHARS } from '../../../shared/adapters/analysis/call-narrative.ts';
import { quote } from '../../../shared/adapters/analysis/coaching-insights.ts';

const wellFormed = (text: string): boolean => !/[\ud800-\udfff]/u.test(text);
const codePoints = (text: string): number => [...text].length;

test('a title past 120 characters is cut between characters, never inside a 4-byte letter of the name', () => {
  // "Pricing objection and next steps with " is 38 characters; the name's 82nd character is a
  // Deseret letter (a letter outside the BMP, two UTF-16 units) at units 119–120 of the title, so a
  // cut at 120 UTF-16 units would keep only its first half.
  const headline = 'Pricing objection and next steps with ';
  const name = `A${'a'.repeat(19)} B${'b'.repeat(19)} C${'c'.repeat(19)} D${'d'.repeat(17)}𐐨dd`;
  const transcript = [
    `Rep: Hi ${name}, is the price a concern? What budget do you have?`,
    `${name}: The price is too expensive for our budget.`,
    'Rep: I understand the pricing concern. We can schedule a demo next Tuesday.',
    `${name}: Ok.`,
  ].join('\n');
  const { title } = analyseTranscript({ transcript });
  assert.ok(title.startsWith(headline), title);
  assert.equal(codePoints(title), MAX_TITLE_CHARS);
  assert.ok(wellFormed(title), `no half of a surrogate pair: ${JSON.stringify(title.slice(-3))}`);
  assert.equal(title, `${headline}${name}`.slice(0, MAX_TITLE_CHARS + 1), 'the Deseret letter is kept whole');
});

test('an evidence quote past 240 characters keeps an emoji at the cut whole', () => {
  for (let at = 236; at <= 242; at++) {
    const sentence = `${'x'.repeat(at)}😀${'y'.repeat(20)}`;
    const quoted = quote(sentence);
    assert.ok(quoted.endsWith('…'), quoted.slice(-5));
    assert.ok(wellFormed(quoted), `emoji at ${at}: ${JSON.stringify(quoted.slice(-4))}`);
    assert.ok(sentence.startsWith(quoted.slice(0, -1)), 'the kept part is verbatim');
    assert.ok(codePoints(quoted) <= 241);
  }
  assert.equal(quote('short 😀'), 'short 😀');
});
