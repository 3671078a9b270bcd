/**
 * The built-in conversation analyser: deterministic heuristics over the transcript (same input →
 * same output; no clock, no randomness, no network). English word lists.
 *
 * HOW THE SCORE IS COMPUTED (engine `conversation-analyser/1`)
 *
 * Words are runs of letters and digits (`don't` is one word). The transcript is read into turns as
 * `transcript-parser.ts` describes; speakers are "known" when at least two are labelled, and one
 * of them is the rep (matched by repName, else a role label such as `Rep:`, else the first
 * speaker). When speakers are not known the whole transcript stands in for "the rep" (every
 * question and every filler word counts).
 * W = all words of the call.
 *
 * | component (nominal weight) | value (raw measure)                   | component score 0–100                             |
 * |----------------------------|---------------------------------------|---------------------------------------------------|
 * | talk_ratio (0.20)          | r = rep words / labelled words, in %  | piecewise linear through (0,0) (30,80) (40,100)   |
 * |                            |   (one decimal)                       |   (60,100) (65,80) (100,0): 40–60% is ideal       |
 * | questions_asked (0.20)     | q = the rep's question sentences      | min(100, 100·q / t), t = clamp(⌈W / 250⌉, 3, 12)  |
 * | longest_monologue (0.15)   | m = words in the rep's longest turn   | 100 if m ≤ 150, else max(0, 100 − 0.4·(m − 150))  |
 * | filler_words (0.10)        | f = fillers per 100 rep words (1 dp)  | 100 if f ≤ 1, else max(0, 100 − 12.5·(f − 1))     |
 * | next_steps (0.20)          | n = turns with a next-step action     | 100 if one turn has an action and a time;         |
 * |                            |                                       |   else 60 if an action; 30 if a time; 0 if neither |
 * | objection_handling (0.15)  | h = % of prospect objections answered | h                                                 |
 *
 * Each component score is rounded to an integer.
 *
 * - A question ends with `?`; in a transcript with no `?` at all, a sentence opening with a
 *   question word (what, how, why, can you, tell me…) is one.
 * - Fillers: um, uh, er, erm, ah, hmm, basically, actually, literally; "like", "you know",
 *   "I mean" only when set off by a comma or the end of the sentence.
 * - Next-step actions: next step, follow up, send you/over, I'll send, calendar invite, schedule a…,
 *   book a…, set up a…, get back to you, touch base, circle back. Times: weekdays, tomorrow, next
 *   week, end of day/week/month, dates (`March 3`, `3/14`, `2026-03-14`), clock times (`2pm`).
 * - Objections: a prospect sentence about price (expensive, budget, afford, too much…, or price /
 *   pricing / cost together with doubt: "worried about the price"), timing
 *   (timing, not a priority, next quarter…), a competitor (already use, another vendor…) or doubt
 *   (not sure, concerned, worried…), at most one per prospect turn. Answered: the very next turn
 *   is the rep's and asks a question, or has at least 8 words and acknowledges the concern
 *   (understand, fair, makes sense…) or speaks to it (price → cost, budget, ROI, pilot…; timing →
 *   timeline, quarter, priority…). "Okay. Anyway, the other thing is…" does not answer.
 * - Omitted components: talk_ratio and longest_monologue when speakers are not known;
 *   objection_handling when speakers are not known or no objection was raised.
 *
 * Overall score = round(Σ wᵢ·sᵢ / Σ wᵢ) over the components present, with the integer component
 * scores sᵢ and nominal weights wᵢ; each component reports its renormalised weight wᵢ / Σ wᵢ, so
 * the reported weights sum to 1 and the score can be recomputed from the payload.
 *
 * A transcript with no word left after cleaning is a terminal StepError `transcript_empty`: a
 * score of nothing would be invented, and a failed call with that reason tells the integrator
 * what to fix. A very short one (< 50 words) is analysed, says so in the summary, each component's
 * explanation and a `transcript_short` insight.
 */
import type { Analyser, Analysis, AnalysisInput, ScoreComponent } from '../../ports/analyser.ts';
import { StepError } from '../../ports/step-error.ts';
import { measureCall, repDisplayName, SHORT_TRANSCRIPT_WORDS, type CallFacts } from './call-facts.ts';
import { coachingInsights } from './coaching-insights.ts';
import { summarise, titleFor } from './call-narrative.ts';
import { parseTranscript } from './transcript-parser.ts';

export const CONVERSATION_ENGINE = 'conversation-analyser/1';

export type ComponentName =
  'talk_ratio' | 'questions_asked' | 'longest_monologue' | 'filler_words' | 'next_steps' | 'objection_handling';

export const NOMINAL_WEIGHTS: Record<ComponentName, number> = {
  talk_ratio: 0.2,
  questions_asked: 0.2,
  longest_monologue: 0.15,
  filler_words: 0.1,
  next_steps: 0.2,
  objection_handling: 0.15,
};

interface Draft {
  name: ComponentName;
  value: number;
  score: number;
  explanation: string;
}

const clamp = (n: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, n));
const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/** Linear interpolation through points sorted by x; flat outside them. */
const piecewise = (points: [number, number][], x: number): number => {
  const [first] = points;
  if (first === undefined || x <= first[0]) return first?.[1] ?? 0;
  for (let i = 1; i < points.length; i++) {
    const [x0, y0] = points[i - 1]!;
    const [x1, y1] = points[i]!;
    if (x <= x1) return y0 + ((y1 - y0) * (x - x0)) / (x1 - x0);
  }
  return points.at(-1)![1];
};

export const TALK_RATIO_CURVE: [number, number][] = [
  [0, 0],
  [30, 80],
  [40, 100],
  [60, 100],
  [65, 80],
  [100, 0],
];
export const talkRatioScore = (ratio: number): number => Math.round(piecewise(TALK_RATIO_CURVE, ratio));
export const questionTarget = (totalWords: number): number => clamp(Math.ceil(totalWords / 250), 3, 12);
export const questionsScore = (questions: number, totalWords: number): number =>
  Math.round(Math.min(100, (100 * questions) / questionTarget(totalWords)));
export const monologueScore = (words: number): number => Math.round(clamp(100 - 0.4 * (words - 150), 0, 100));
export const fillerScore = (perHundred: number): number => Math.round(clamp(100 - 12.5 * (perHundred - 1), 0, 100));
export const nextStepsScore = ({ actionTurns, agreed, timeMentioned }: CallFacts['nextSteps']): number =>
  agreed ? 100 : actionTurns > 0 ? 60 : timeMentioned ? 30 : 0;

const drafts = (facts: CallFacts, repName: string | undefined): Draft[] => {
  const rep = repDisplayName(facts, repName);
  const known = facts.rep !== undefined;
  const out: Draft[] = [];
  if (facts.talkRatio !== undefined) {
    out.push({
      name: 'talk_ratio',
      value: facts.talkRatio,
      score: talkRatioScore(facts.talkRatio),
      explanation: `${rep} spoke ${facts.talkRatio}% of the words. 40–60% scores 100, 30% or 65% scores 80, falling to 0 at 0% or 100%.`,
    });
  }
  const q = facts.questions.length;
  const howFound = facts.punctuated
    ? ''
    : ' (the transcript has no "?", so sentences opening with what, how, can you… count)';
  out.push({
    name: 'questions_asked',
    value: q,
    score: questionsScore(q, facts.totalWords),
    explanation:
      `${known ? `${rep} asked` : 'The transcript has'} ${plural(q, 'question')}${known ? '' : ' (speakers unknown, so every question counts)'}` +
      `${howFound}, ${facts.openQuestions.length} open; the target for a ${facts.totalWords}-word call is ${questionTarget(facts.totalWords)} (one per 250 words, 3 to 12).`,
  });
  if (facts.longestMonologue) {
    const m = facts.longestMonologue.words;
    out.push({
      name: 'longest_monologue',
      value: m,
      score: monologueScore(m),
      explanation: `${rep}'s longest uninterrupted turn ran ${plural(m, 'word')}. Up to 150 words scores 100, falling to 0 at 400.`,
    });
  }
  const f = facts.fillers;
  out.push({
    name: 'filler_words',
    value: f.perHundredWords,
    score: fillerScore(f.perHundredWords),
    explanation: `${plural(f.count, 'filler word')} (um, uh, like, you know, basically, actually…) in ${plural(facts.repWords, 'word')}${known ? ` by ${rep}` : ''}: ${f.perHundredWords} per 100. Up to 1 per 100 scores 100, falling to 0 at 9.`,
  });
  const n = facts.nextSteps;
  out.push({
    name: 'next_steps',
    value: n.actionTurns,
    score: nextStepsScore(n),
    explanation: n.agreed
      ? 'A next step was agreed with a concrete time (an action such as send or schedule and a day, date or time in one turn): 100.'
      : n.actionTurns > 0
        ? `A next step was mentioned in ${plural(n.actionTurns, 'turn')} but never with a day, date or time: 60.`
        : n.timeMentioned
          ? 'A day or date came up, but no action such as send, schedule or follow up: 30.'
          : 'No next step (send, schedule, follow up, next step…) was mentioned: 0.',
  });
  if (known && facts.objections.length > 0) {
    const answered = facts.objections.filter((o) => o.answered).length;
    const total = facts.objections.length;
    const share = Math.round((100 * answered) / total);
    out.push({
      name: 'objection_handling',
      value: share,
      score: share,
      explanation: `${answered} of ${plural(total, 'prospect objection')} (price, timing, competitor, doubt) answered in ${rep}'s very next turn (a question back, or 8+ words that acknowledge or address it): ${share}%.`,
    });
  }
  if (facts.totalWords < SHORT_TRANSCRIPT_WORDS) {
    for (const d of out) d.explanation += ` Based on only ${plural(facts.totalWords, 'word')}, so it says little.`;
  }
  return out;
};

/** Components with renormalised weights, and the overall score (formula at the top of this file). */
export const scoreCall = (facts: CallFacts, repName?: string): { score: number; components: ScoreComponent[] } => {
  const present = drafts(facts, repName);
  const total = present.reduce((sum, d) => sum + NOMINAL_WEIGHTS[d.name], 0);
  const weighted = present.reduce((sum, d) => sum + NOMINAL_WEIGHTS[d.name] * d.score, 0);
  return {
    score: clamp(Math.round(weighted / total), 0, 100),
    components: present.map((d) => ({ ...d, weight: Math.round((NOMINAL_WEIGHTS[d.name] / total) * 10_000) / 10_000 })),
  };
};

/** The whole analysis of one transcript, synchronously. */
export const analyseTranscript = (input: AnalysisInput): Analysis => {
  const parsed = parseTranscript(
    input.transcript,
    { repName: input.repName, repEmail: input.repEmail },
    input.segments,
  );
  if (parsed.totalWords === 0) {
    throw new StepError(
      'transcript_empty',
      'The transcript has no words once timestamps, cue markers and blank lines are removed.',
      false,
    );
  }
  const facts = measureCall(parsed);
  const { score, components } = scoreCall(facts, input.repName);
  const analysis: Analysis = {
    title: titleFor(facts, components),
    summary: summarise(facts, components, input.repName),
    score,
    components,
    insights: coachingInsights(facts, components, input.repName),
    engine: CONVERSATION_ENGINE,
  };
  if (parsed.speakersKnown) analysis.speakers = parsed.speakers.map(({ name, role, words }) => ({ name, role, words }));
  return analysis;
};

export const createConversationAnalyser = (): Analyser => ({
  async analyse(input, options) {
    options?.signal?.throwIfAborted();
    return analyseTranscript(input);
  },
  describe: () => `built-in conversation analyser (${CONVERSATION_ENGINE}, deterministic heuristics)`,
  inProcess: true,
});
