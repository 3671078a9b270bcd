import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  analyseTranscript,
  fillerScore,
  monologueScore,
  nextStepsScore,
  questionsScore,
  questionTarget,
  talkRatioScore,
} from '../../../shared/adapters/analysis/conversation-analyser.ts';
import {
  fillerWords,
  isOpenQuestion,
  isQuestion,
  nextStepSignals,
  objectionsIn,
} from '../../../shared/adapters/analysis/conversation-signals.ts';
import type { Analysis } from '../../../shared/ports/analyser.ts';
import { words } from './fixtures.ts';

const component = (analysis: Analysis, name: string) => analysis.components.find((c) => c.name === name);
const analyse = (transcript: string, repName?: string) =>
  analyseTranscript(repName ? { transcript, repName } : { transcript });

test('talk_ratio score: piecewise linear through (0,0) (30,80) (40,100) (60,100) (65,80) (100,0)', () => {
  const table: [ratio: number, score: number][] = [
    [0, 0],
    [15, 40],
    [30, 80],
    [35, 90],
    [40, 100],
    [50, 100],
    [60, 100],
    [62.5, 90],
    [65, 80],
    [82.5, 40],
    [100, 0],
  ];
  for (const [ratio, score] of table) assert.equal(talkRatioScore(ratio), score, `ratio ${ratio}%`);
});

test("talk_ratio from a transcript: the rep's share of labelled words", () => {
  const table: [rep: number, prospect: number, value: number, score: number][] = [
    [50, 50, 50, 100],
    [80, 20, 80, 46],
    [20, 80, 20, 53],
    [65, 35, 65, 80],
  ];
  for (const [rep, prospect, value, score] of table) {
    const c = component(analyse(`Rep: ${words(rep)}\nDana: ${words(prospect)}`), 'talk_ratio');
    assert.deepEqual([c?.value, c?.score], [value, score], `${rep}/${prospect}`);
  }
});

test('talk_ratio is omitted when speakers are not known, and the other weights are renormalised', () => {
  const analysis = analyse(`${words(30)}. What do you need?\nI will send you the deck on Friday.`);
  assert.deepEqual(
    analysis.components.map((c) => [c.name, c.weight]),
    [
      ['questions_asked', 0.4],
      ['filler_words', 0.2],
      ['next_steps', 0.4],
    ],
  );
});

test('questions: a "?" sentence; with no "?" anywhere, a sentence opening with a question word; open ones invite more than yes/no', () => {
  const table: [sentence: string, punctuated: boolean, question: boolean, open: boolean][] = [
    ["What's your process today?", true, true, true],
    ['Do you use Salesforce?', true, true, false],
    ['So how do you handle renewals?', true, true, true],
    ['Tell me about your team.', true, false, true],
    ['We ship fast.', true, false, false],
    ['what is your process today', false, true, true],
    ['could you walk me through it', false, true, true],
    ['we ship fast', false, false, false],
  ];
  for (const [sentence, punctuated, question, open] of table) {
    assert.equal(isQuestion(sentence, punctuated), question, sentence);
    assert.equal(isOpenQuestion(sentence), open, sentence);
  }
});

test('questions_asked score: min(100, 100·q/t) with t = clamp(ceil(W/250), 3, 12)', () => {
  const table: [questions: number, totalWords: number, target: number, score: number][] = [
    [0, 100, 3, 0],
    [1, 100, 3, 33],
    [3, 100, 3, 100],
    [2, 1000, 4, 50],
    [6, 10_000, 12, 50],
    [20, 10_000, 12, 100],
  ];
  for (const [q, w, target, score] of table) {
    assert.equal(questionTarget(w), target, `target for ${w} words`);
    assert.equal(questionsScore(q, w), score, `${q} questions in ${w} words`);
  }
});

test("questions_asked counts only the rep's questions when speakers are known", () => {
  const analysis = analyse(
    'Alex: What matters most to you? How do you measure it?\nDana: Speed. What does it cost?\nAlex: It depends on seats.',
    'Alex',
  );
  const c = component(analysis, 'questions_asked');
  assert.deepEqual([c?.value, c?.score], [2, 67]);
});

test('longest_monologue score: 100 up to 150 words, then −0.4 per word, 0 from 400', () => {
  const table: [words: number, score: number][] = [
    [0, 100],
    [150, 100],
    [151, 100],
    [200, 80],
    [275, 50],
    [400, 0],
    [1000, 0],
  ];
  for (const [w, score] of table) assert.equal(monologueScore(w), score, `${w} words`);
  const c = component(
    analyse(`Rep: ${words(100)}\nDana: ok\nRep: ${words(300)}\nDana: ${words(300)}`),
    'longest_monologue',
  );
  assert.deepEqual([c?.value, c?.score], [300, 40]);
});

test('filler words: um/uh/basically/actually always; like, you know, I mean only when set off', () => {
  const table: [text: string, fillers: string[]][] = [
    ['Um, so, like, we basically ship it.', ['um', 'like', 'basically']],
    ["I'd like to see it. We like it.", []],
    ['Do you know Dana? You know, it works, you know.', ['you know', 'you know']],
    ['I mean, uh, it actually works. I mean it.', ['i mean', 'uh', 'actually']],
    ['Hmm. Umm, er, literally.', ['hmm', 'umm', 'er', 'literally']],
  ];
  for (const [text, fillers] of table) assert.deepEqual(fillerWords(text), fillers, text);
});

test('filler_words score: 100 up to 1 per 100 rep words, −12.5 per extra one, 0 from 9', () => {
  const table: [perHundred: number, score: number][] = [
    [0, 100],
    [1, 100],
    [3, 75],
    [5, 50],
    [9, 0],
    [20, 0],
  ];
  for (const [rate, score] of table) assert.equal(fillerScore(rate), score, `${rate} per 100`);
  const c = component(
    analyse(`Rep: um ${words(49)} basically ${words(49)}\nDana: um um um um ${words(10)}`),
    'filler_words',
  );
  assert.deepEqual([c?.value, c?.score], [2, 88], "2 fillers in 100 rep words; the prospect's do not count");
});

test('next steps: an action (send, schedule, follow up…) and a concrete time (weekday, date, tomorrow, 2pm…)', () => {
  const table: [text: string, action: boolean, time: boolean][] = [
    ["Let's schedule a call next Tuesday.", true, true],
    ["I'll send you the deck.", true, false],
    ['Follow up on March 3rd.', true, true],
    ['I can send over the contract by 3/14.', true, true],
    ['As a next step, we reconvene 2026-03-14.', true, true],
    ["I'm out on Friday.", false, true],
    ['See you at 2pm.', false, true],
    ['Thanks, bye.', false, false],
    ['Our schedule is busy in May.', false, false],
  ];
  for (const [text, action, time] of table) assert.deepEqual(nextStepSignals(text), { action, time }, text);
  assert.deepEqual(
    [
      nextStepsScore({ actionTurns: 1, agreed: true, timeMentioned: true }),
      nextStepsScore({ actionTurns: 2, agreed: false, timeMentioned: true }),
      nextStepsScore({ actionTurns: 0, agreed: false, timeMentioned: true }),
      nextStepsScore({ actionTurns: 0, agreed: false, timeMentioned: false }),
    ],
    [100, 60, 30, 0],
  );
});

test('next_steps from a transcript: agreed only when one turn pairs the action with a time', () => {
  const table: [transcript: string, value: number, score: number][] = [
    ["Rep: I'll send you the proposal by Friday.\nDana: Great.", 1, 100],
    ["Rep: I'll send you the proposal.\nDana: I'm away until Monday.", 1, 60],
    ['Rep: Talk Monday.\nDana: Bye.', 0, 30],
    ['Rep: Thanks.\nDana: Bye.', 0, 0],
  ];
  for (const [transcript, value, score] of table) {
    const c = component(analyse(transcript), 'next_steps');
    assert.deepEqual([c?.value, c?.score], [value, score], transcript);
  }
});

test('objections: price, timing, competitor, doubt — in that precedence; price words count with doubt', () => {
  const table: [sentence: string, categories: string[]][] = [
    ["That's too expensive for us.", ['price']],
    ["I'm worried about the price.", ['price', 'doubt']],
    ['Now is not the right time.', ['timing']],
    ['We already use Gong.', ['competitor']],
    ["I'm not sure this fits.", ['doubt']],
    ['No concerns from me.', []],
    ['What does the pricing look like?', []],
    ['Sounds good.', []],
  ];
  for (const [sentence, categories] of table) assert.deepEqual(objectionsIn(sentence), categories, sentence);
});

test("objection_handling: answered when the very next turn is the rep's and asks back, or has ≥ 8 words that acknowledge or address it", () => {
  const answer = 'Totally fair, most teams recover the cost within one quarter.';
  const table: [transcript: string, value: number | undefined][] = [
    [`Rep: Hello there.\nDana: It is too expensive.\nRep: ${answer}`, 100],
    ['Rep: Hello there.\nDana: It is too expensive.\nRep: I understand, many teams felt the same way at first.', 100],
    [
      'Rep: Hello there.\nDana: Not a priority this quarter.\nRep: We can phase it in next quarter with a small group.',
      100,
    ],
    ['Rep: Hello there.\nDana: It is too expensive.\nRep: Okay. Moving on.', 0],
    [
      'Rep: Hello there.\nDana: It is too expensive.\nRep: Okay. Anyway, the other thing is our mobile app for reps.',
      0,
    ],
    ['Rep: Hello there.\nDana: It is too expensive.\nLee: I agree with Dana on that point, it really is.', 0],
    ['Rep: Hello there.\nDana: It is too expensive.\nRep: What budget works?', 100],
    ['Rep: Hello there.\nDana: It is too expensive.', 0],
    [`Rep: Hi.\nDana: Too expensive.\nRep: ${answer}\nDana: And we already use Gong.\nRep: Right.`, 50],
    ['Rep: Hello there.\nDana: Sounds good.', undefined],
  ];
  for (const [transcript, value] of table) {
    const c = component(analyse(transcript), 'objection_handling');
    assert.equal(c?.value, value, transcript);
    if (c) assert.equal(c.score, value);
  }
});

test('overall score = round(Σ w·s) with the reported weights, which sum to 1', () => {
  for (const transcript of [
    `Rep: ${words(200)} What do you need?\nDana: It is too expensive.\nRep: Okay.`,
    `Rep: um ${words(40)}?\nDana: ${words(60)}\nRep: I will send the deck tomorrow.`,
    `${words(80)}. Any questions?`,
  ]) {
    const analysis = analyse(transcript);
    const weights = analysis.components.reduce((sum, c) => sum + c.weight, 0);
    assert.ok(Math.abs(weights - 1) < 0.001, `weights sum to ${weights}`);
    const recomputed = analysis.components.reduce((sum, c) => sum + c.weight * c.score, 0);
    assert.ok(Math.abs(recomputed - analysis.score) <= 0.51, `${recomputed} ≈ ${analysis.score}`);
    assert.ok(Number.isInteger(analysis.score) && analysis.score >= 0 && analysis.score <= 100);
  }
});
