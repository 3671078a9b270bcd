/**
 * Coaching insights of the built-in analyser. Pure.
 *
 * Each score component gives exactly one insight — a strength when its score is ≥ 80, otherwise an
 * improvement — so a call gets 3 to 6 (plus `transcript_short` for a transcript under 50 words,
 * still at most 6). Order: `transcript_short`, then improvements by what they cost the overall
 * score (weight × (100 − score)), then strengths by what they bring (weight × score).
 *
 * Evidence is one sentence quoted verbatim from one transcript line (cut at a word with "…" past
 * 240 characters): the longest turn's first sentence, the first open question, the objection, the
 * sentence with the next step, the sentence with most filler words, the last sentence of the call…
 */
import type { Insight, ScoreComponent } from '../../ports/analyser.ts';
import { mainProspect, repDisplayName, SHORT_TRANSCRIPT_WORDS, type CallFacts } from './call-facts.ts';
import type { ObjectionCategory } from './conversation-signals.ts';
import type { Utterance } from './transcript-parser.ts';
import { truncateChars } from '../../domain/submission/truncate-utf8.ts';

export const STRENGTH_THRESHOLD = 80;
const MAX_INSIGHTS = 6;
const MAX_EVIDENCE_CHARS = 240;

const NOUN: Record<ObjectionCategory, string> = {
  price: 'pricing',
  timing: 'timing',
  competitor: 'competitor',
  doubt: 'uncertainty',
};

export const quote = (sentence: string): string => {
  // Characters are code points: a cut never leaves half of a surrogate pair (an emoji).
  const cut = truncateChars(sentence, MAX_EVIDENCE_CHARS);
  if (cut === sentence) return sentence;
  const space = cut.lastIndexOf(' ');
  return `${(space > 80 ? cut.slice(0, space) : cut).trimEnd()}…`;
};

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

interface Ranked extends Insight {
  priority: number;
}

export const coachingInsights = (
  facts: CallFacts,
  components: ScoreComponent[],
  repName: string | undefined,
): Insight[] => {
  const { parsed } = facts;
  const rep = repDisplayName(facts, repName);
  const prospect = mainProspect(facts)?.name ?? 'the prospect';
  const firstSentence = parsed.utterances[0]?.sentences[0] ?? parsed.utterances[0]?.text ?? '';
  const lastSentence = parsed.utterances.at(-1)?.sentences.at(-1) ?? firstSentence;
  const opening = (u: Utterance | undefined): string => u?.sentences[0] ?? firstSentence;
  const longest = new Map<'rep' | 'prospect', Utterance>();
  const roles = new Map(parsed.speakers.map((s) => [s.key, s.role]));
  for (const u of parsed.utterances) {
    const role = u.speaker === undefined ? undefined : roles.get(u.speaker);
    if (role !== 'rep' && role !== 'prospect') continue;
    const best = longest.get(role);
    if (!best || u.words > best.words) longest.set(role, u);
  }
  const longestOf = (role: 'rep' | 'prospect'): Utterance | undefined => longest.get(role);

  const ranked: Ranked[] = [];
  for (const c of components) {
    const strength = c.score >= STRENGTH_THRESHOLD;
    const priority = strength ? c.weight * c.score : 1_000 + c.weight * (100 - c.score);
    const add = (code: string, message: string, evidence: string) =>
      ranked.push({ kind: strength ? 'strength' : 'improvement', code, message, evidence: quote(evidence), priority });
    switch (c.name) {
      case 'talk_ratio':
        if (strength)
          add(
            'talk_ratio_balanced',
            `${rep} spoke ${c.value}% of the words: a balanced conversation that let ${prospect} talk.`,
            opening(longestOf('prospect')),
          );
        else if (c.value > 60)
          add(
            'talk_ratio_high',
            `${rep} spoke ${c.value}% of the words; aim for 40–60% by asking more and pausing to let ${prospect} talk.`,
            opening(longestOf('rep')),
          );
        else
          add(
            'talk_ratio_low',
            `${rep} spoke only ${c.value}% of the words; steer the call with an agenda and questions rather than only listening.`,
            opening(longestOf('prospect')),
          );
        break;
      case 'questions_asked': {
        const asked = facts.rep ? `${rep} asked` : 'The call has';
        if (strength)
          add(
            'questions_good',
            `${asked} ${plural(facts.questions.length, 'question')} (${facts.openQuestions.length} open), enough to understand the buyer's situation.`,
            facts.openQuestions[0] ?? facts.questions[0] ?? firstSentence,
          );
        else {
          const asked =
            facts.questions.length === 0 ? 'No questions' : `Only ${plural(facts.questions.length, 'question')}`;
          // With no question to quote: the end of the rep's longest turn, where one could have handed over.
          add(
            'questions_few',
            `${asked} in a ${facts.totalWords}-word call; ask open questions (what, how, why) to uncover needs.`,
            facts.questions[0] ?? longestOf('rep')?.sentences.at(-1) ?? firstSentence,
          );
        }
        break;
      }
      case 'longest_monologue':
        if (strength && c.value <= 150)
          add(
            'monologue_short',
            `Turns stayed short (longest ${c.value} words), leaving room for ${prospect}.`,
            opening(facts.longestMonologue),
          );
        else if (strength)
          add(
            'monologue_short',
            `The longest turn ran ${c.value} words, just over the 150-word guide; other turns left room for ${prospect}.`,
            opening(facts.longestMonologue),
          );
        else
          add(
            'monologue_long',
            `The longest turn ran ${c.value} words; stop after about 150 words and check in with a question.`,
            opening(facts.longestMonologue),
          );
        break;
      case 'filler_words': {
        const top = [...facts.fillers.byWord].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0]?.[0];
        if (strength)
          add(
            'filler_words_low',
            `Clear delivery: ${c.value} filler words per 100 words.`,
            facts.fillers.worstSentence ?? opening(longestOf('rep')),
          );
        else
          add(
            'filler_words_high',
            `${c.value} filler words per 100 words${top ? ` (mostly "${top}")` : ''}; a short pause sounds more confident.`,
            facts.fillers.worstSentence ?? firstSentence,
          );
        break;
      }
      case 'next_steps':
        if (strength)
          add(
            'next_steps_agreed',
            'The call closed with a concrete, dated next step.',
            facts.nextSteps.sentence ?? lastSentence,
          );
        else if (facts.nextSteps.actionTurns > 0)
          add(
            'next_steps_vague',
            'A next step came up without a date; agree on a day and time before hanging up.',
            facts.nextSteps.sentence ?? lastSentence,
          );
        else
          add(
            'next_steps_missing',
            'No next step was agreed; close every call with a concrete, dated next step.',
            lastSentence,
          );
        break;
      case 'objection_handling': {
        const n = facts.objections.length;
        const answered = facts.objections.filter((o) => o.answered);
        const example = (strength ? answered[0] : facts.objections.find((o) => !o.answered)) ?? facts.objections[0];
        const noun = example ? NOUN[example.category] : 'buyer';
        if (strength)
          add(
            'objection_handled',
            n === 1
              ? `The ${noun} objection was answered directly.`
              : `${answered.length} of ${n} objections were answered directly, e.g. the ${noun} concern.`,
            example?.sentence ?? firstSentence,
          );
        else
          add(
            'objection_unanswered',
            `${n - answered.length} of ${plural(n, 'objection')} went unanswered, e.g. this ${noun} concern; acknowledge it and respond before moving on.`,
            example?.sentence ?? firstSentence,
          );
        break;
      }
      default:
        break;
    }
  }
  if (facts.totalWords < SHORT_TRANSCRIPT_WORDS) {
    ranked.push({
      kind: 'improvement',
      code: 'transcript_short',
      message: `The transcript has only ${plural(facts.totalWords, 'word')}; send the whole call for a meaningful score.`,
      evidence: quote(firstSentence),
      priority: 10_000,
    });
  }
  ranked.sort((a, b) => b.priority - a.priority);
  return ranked.slice(0, MAX_INSIGHTS).map(({ priority: _priority, ...insight }) => insight);
};
