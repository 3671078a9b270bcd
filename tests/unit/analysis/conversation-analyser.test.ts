import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Value } from '@sinclair/typebox/value';
import {
  analyseTranscript,
  createConversationAnalyser,
} from '../../../shared/adapters/analysis/conversation-analyser.ts';
import { AnalysisSchema, type Analysis } from '../../../shared/ports/analyser.ts';
import { isStepError } from '../../../shared/ports/step-error.ts';
import { POOR_CALL, SALES_CALL, words } from './fixtures.ts';

/** Evidence is verbatim from the transcript; a quote cut short ends in "…" and its kept part is verbatim. */
const assertEvidenceInTranscript = (analysis: Analysis, transcript: string) => {
  for (const insight of analysis.insights) {
    const quoted = insight.evidence.endsWith('…') ? insight.evidence.slice(0, -1) : insight.evidence;
    assert.ok(
      quoted.length > 0 && transcript.includes(quoted),
      `${insight.code}: "${insight.evidence}" is not in the transcript`,
    );
  }
};

test('worked example: a well-run discovery call with Dana scores 85–100, and every figure is as documented', () => {
  const analysis = analyseTranscript({
    transcript: SALES_CALL,
    repName: 'Alex Kim',
    repEmail: 'alex@acme.io',
    callTitle: 'Acme <> Dana',
  });
  assert.ok(
    Value.Check(AnalysisSchema, analysis),
    [...Value.Errors(AnalysisSchema, analysis)].map((e) => `${e.path} ${e.message}`).join('; '),
  );
  assert.ok(analysis.score >= 85 && analysis.score <= 100, `score ${analysis.score}`);
  assert.equal(analysis.title, 'Pricing objection and next steps with Dana');
  assert.equal(
    analysis.summary,
    'Alex spoke with Dana about pricing and integrations. Dana raised 2 objections (pricing and uncertainty); all were answered. A next step was agreed with a concrete time.',
  );
  assert.deepEqual(
    analysis.components.map((c) => [c.name, c.value, c.score]),
    [
      ['talk_ratio', 58.9, 100],
      ['questions_asked', 6, 100],
      ['longest_monologue', 52, 100],
      ['filler_words', 0, 100],
      ['next_steps', 3, 100],
      ['objection_handling', 100, 100],
    ],
  );
  assert.deepEqual(analysis.speakers, [
    { name: 'Alex', role: 'rep', words: 219 },
    { name: 'Dana', role: 'prospect', words: 153 },
  ]);
  assert.equal(analysis.engine, 'conversation-analyser/1');
  assert.ok(analysis.insights.every((i) => i.kind === 'strength'));
  assert.equal(
    analysis.insights.find((i) => i.code === 'next_steps_agreed')?.evidence,
    "As a next step, I'll send you a proposal for the pilot by Friday, and let's schedule a call with your VP next Tuesday at 2pm.",
  );
  assert.equal(
    analysis.insights.find((i) => i.code === 'objection_handled')?.evidence,
    "That sounds useful, but I'm worried about the price.",
  );
  assertEvidenceInTranscript(analysis, SALES_CALL);
});

test('worked example: a pitch-heavy call that ignores two objections and sets no next step scores 10–35', () => {
  const analysis = analyseTranscript({ transcript: POOR_CALL, repName: 'Sam Lee' });
  assert.ok(analysis.score >= 10 && analysis.score <= 35, `score ${analysis.score}`);
  assert.equal(analysis.title, 'Timing objection with Jordan');
  assert.match(
    analysis.summary,
    /Jordan raised 2 objections \(timing and pricing\); none was answered\. No next step was agreed\./,
  );
  assert.deepEqual(
    analysis.insights.filter((i) => i.kind === 'improvement').map((i) => i.code),
    ['questions_few', 'next_steps_missing', 'objection_unanswered', 'talk_ratio_high', 'filler_words_high'],
    'improvements ordered by what they cost the score',
  );
  assert.equal(
    analysis.insights.find((i) => i.code === 'objection_unanswered')?.evidence,
    'Honestly the timing is not great.',
  );
  assert.equal(
    analysis.insights.find((i) => i.code === 'filler_words_high')?.evidence,
    'Um, so, basically I wanted to, like, walk you through our platform today.',
  );
  assertEvidenceInTranscript(analysis, POOR_CALL);
});

test('deterministic: the same input gives the same output, call after call and analyser after analyser', async () => {
  const input = { transcript: SALES_CALL, repName: 'Alex Kim' };
  const first = await createConversationAnalyser().analyse(input);
  for (let i = 0; i < 3; i++) assert.deepEqual(await createConversationAnalyser().analyse(input), first);
  assert.deepEqual(analyseTranscript({ transcript: POOR_CALL }), analyseTranscript({ transcript: POOR_CALL }));
});

test("title rule 1: the integrator's callTitle is never the title, nor changes the analysis", () => {
  const without = analyseTranscript({ transcript: SALES_CALL });
  const withTitle = analyseTranscript({ transcript: SALES_CALL, callTitle: 'Outbound - Connected - Interested' });
  assert.deepEqual(withTitle, without);
  assert.notEqual(withTitle.title, 'Outbound - Connected - Interested');
});

test("title: the prospect's name as labelled and the dominant objection or topic; fallbacks", () => {
  const table: [transcript: string, title: string][] = [
    [
      'Alex: Let me show you the demo.\nDana Reyes: Can the demo show the dashboard?\nAlex: Yes.',
      'Product demo with Dana Reyes',
    ],
    [
      "Alex: Let's review security.\nLEE PARK: We need SOC 2 and SSO.\nAlex: I'll send you our security pack on Monday.",
      'Security review and next steps with Lee Park',
    ],
    ['Rep: Hi there.\nDana: We already use Gong for this.\nRep: Got it.', 'Competitor objection with Dana'],
    ['Rep: Hi there.\nDana: Good, thanks.\nRep: Great.', 'Sales conversation with Dana'],
    ['Speaker 1: Hi there.\nSpeaker 2: Good, thanks.', 'Sales call'],
    ['Agent: About the renewal.\nCustomer: The renewal is due.', 'Renewal discussion'],
    ['We talked about the contract and legal terms.\nThe contract goes to procurement.', 'Contract negotiation'],
  ];
  for (const [transcript, title] of table) assert.equal(analyseTranscript({ transcript }).title, title, transcript);
});

test('title: the prospect is the non-rep speaker who said most, whichever label the rep has', () => {
  const transcript = `Dana: ${words(5)}\nAlex: ${words(20)}\nLee: ${words(30)}`;
  assert.equal(analyseTranscript({ transcript, repName: 'Alex' }).title, 'Sales conversation with Lee');
  assert.equal(analyseTranscript({ transcript, repName: 'Lee' }).title, 'Sales conversation with Alex');
});

test('insights: 2 to 6, each quoting a line really in the transcript, for labelled, plain, VTT and tiny transcripts', () => {
  const vtt = `WEBVTT\n\n1\n00:00:01.000 --> 00:00:05.000\n<v Alex>What is your biggest challenge with onboarding today?\n\n2\n00:00:05.000 --> 00:00:09.000\n<v Dana>Honestly it takes too long, and the price of our current tool is too high.\n\n3\n00:00:09.000 --> 00:00:12.000\n<v Alex>That makes sense, our pilot plan fixes both. Can I send you the pricing on Friday?`;
  for (const transcript of [
    SALES_CALL,
    POOR_CALL,
    SALES_CALL.replace(/^\w+: /gm, ''),
    vtt,
    'Hi.',
    'Rep: Hi?\nDana: Yes.',
  ]) {
    const analysis = analyseTranscript({ transcript });
    assert.ok(analysis.insights.length >= 2 && analysis.insights.length <= 6, `${analysis.insights.length} insights`);
    assert.ok(Value.Check(AnalysisSchema, analysis), transcript);
    assertEvidenceInTranscript(analysis, transcript);
    assert.equal(new Set(analysis.insights.map((i) => i.code)).size, analysis.insights.length, 'codes are unique');
  }
});

test('a long evidence sentence is cut at a word with "…" and its kept part is verbatim', () => {
  const long = `Rep: ${words(80, 'blah')} and so on.\nDana: Okay.`;
  const analysis = analyseTranscript({ transcript: long });
  const evidence = analysis.insights.find((i) => i.code === 'talk_ratio_high')?.evidence ?? '';
  assert.ok(evidence.endsWith('…') && evidence.length <= 241, evidence);
  assertEvidenceInTranscript(analysis, long);
});

test('plain unlabelled text: no speakers, no talk_ratio, longest_monologue or objection_handling', () => {
  const plain = SALES_CALL.replace(/^\w+: /gm, '');
  const analysis = analyseTranscript({ transcript: plain });
  assert.equal(analysis.speakers, undefined);
  assert.deepEqual(
    analysis.components.map((c) => c.name),
    ['questions_asked', 'filler_words', 'next_steps'],
  );
  assert.equal(analysis.title, 'Pricing discussion and next steps');
  assert.match(analysis.summary, /^An unlabelled transcript of 372 words about pricing and integrations\./);
});

test('the same call as WebVTT or SRT analyses like its labelled text', () => {
  const lines = SALES_CALL.split('\n');
  const vtt = `WEBVTT\n\n${lines.map((l, i) => `${i + 1}\n00:00:${String(i).padStart(2, '0')}.000 --> 00:00:${String(i).padStart(2, '0')}.900\n${l.replace(/^(\w+): /, '<v $1>')}`).join('\n\n')}\n`;
  const srt = lines
    .map(
      (l, i) => `${i + 1}\n00:00:${String(i).padStart(2, '0')},000 --> 00:00:${String(i).padStart(2, '0')},900\n${l}`,
    )
    .join('\n\n');
  const expected = analyseTranscript({ transcript: SALES_CALL, repName: 'Alex' });
  assert.deepEqual(analyseTranscript({ transcript: vtt, repName: 'Alex' }), expected);
  assert.deepEqual(analyseTranscript({ transcript: srt, repName: 'Alex' }), expected);
});

test('decision: a transcript with no words after cleaning is the terminal StepError transcript_empty', async () => {
  for (const transcript of [
    '',
    '   \n\n',
    'WEBVTT\n\n00:00:01.000 --> 00:00:02.000\n\n',
    '1\n00:00:01,000 --> 00:00:02,000\n[00:00:01]\n',
    '...',
  ]) {
    await assert.rejects(createConversationAnalyser().analyse({ transcript }), (error: unknown) => {
      assert.ok(isStepError(error));
      assert.deepEqual([error.code, error.retriable], ['transcript_empty', false]);
      return true;
    });
  }
});

test('a very short transcript is analysed, and says it carries little information', () => {
  const analysis = analyseTranscript({ transcript: 'Rep: Hi, any questions?\nDana: No, thanks.' });
  assert.ok(Value.Check(AnalysisSchema, analysis));
  assert.equal(analysis.insights[0]?.code, 'transcript_short');
  assert.match(analysis.summary, /very short \(5 words\)/);
  assert.ok(analysis.components.every((c) => c.explanation.includes('Based on only 5 words')));
});

test('an aborted signal rejects with its reason before any work', async () => {
  const controller = new AbortController();
  controller.abort(new Error('shutting down'));
  await assert.rejects(
    createConversationAnalyser().analyse({ transcript: SALES_CALL }, { signal: controller.signal }),
    /shutting down/,
  );
});

test('pathological 500 KB inputs each finish in under two seconds (times reported): unclosed tags, whitespace runs, one huge line, tiny turns', (t) => {
  const size = 500 * 1024;
  const inputs = {
    'unclosed voice tags': '<v '.repeat(size / 3),
    'whitespace run then colon': `${' '.repeat(size)}x: y`,
    'whitespace run in brackets': `a${' '.repeat(size)}(1:`,
    'one line without punctuation': 'word '.repeat(size / 5),
    'a run of one letter': 'u'.repeat(size),
    'open brackets': '[00:'.repeat(size / 4),
    'tiny alternating turns': 'Dana: hi\nAlex: yo\n'.repeat(size / 18),
  };
  for (const [name, transcript] of Object.entries(inputs)) {
    const started = performance.now();
    try {
      analyseTranscript({ transcript });
    } catch (error) {
      assert.ok(isStepError(error) && error.code === 'transcript_empty', name);
    }
    const elapsed = performance.now() - started;
    t.diagnostic(`${name}: ${elapsed.toFixed(0)} ms`);
    // A bound far above the usual tens of milliseconds: it catches a quadratic path, not load.
    assert.ok(elapsed < 2000, `${name} took ${elapsed.toFixed(0)} ms`);
  }
});

test('speed: a 500 KB transcript is analysed in under a second (best of five runs, reported)', (t) => {
  let transcript = '';
  while (Buffer.byteLength(transcript) < 500 * 1024) transcript += `${SALES_CALL}\n`;
  analyseTranscript({ transcript, repName: 'Alex' });
  const runs: number[] = [];
  for (let i = 0; i < 5; i++) {
    const started = performance.now();
    const analysis = analyseTranscript({ transcript, repName: 'Alex' });
    runs.push(performance.now() - started);
    assert.equal(analysis.title, 'Pricing objection and next steps with Dana');
  }
  const best = Math.min(...runs);
  t.diagnostic(`500 KB transcript: best ${best.toFixed(1)} ms, runs ${runs.map((r) => r.toFixed(0)).join('/')} ms`);
  assert.ok(best < 1000, `best of five runs took ${best.toFixed(0)} ms`);
});
