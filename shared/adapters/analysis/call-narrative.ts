/**
 * The title and summary the built-in analyser writes. Pure.
 *
 * Title: `{headline} with {prospect}`, or the headline alone when no prospect has a person's name.
 * - prospect: the non-rep speaker label with a person's name (not `Speaker 2`, `Customer`) who said
 *   most, as written — the full name when the label has it, since call history search matches
 *   substrings of the title (a longer name does not match a shorter title);
 * - headline, the first that applies:
 *   1. an objection was raised → `{Pricing|Timing|Competitor} objection` or `Open concerns`
 *      (the most frequent category; ties → first raised), + ` and next steps` when a next step was
 *      mentioned (next_steps ≥ 60);
 *   2. a dominant topic (the most mentioned with ≥ 2 mentions; `discovery` only when no other
 *      topic reaches 2) → its label (`Product demo`, `Security review`…), + ` and next steps` as above;
 *   3. `Sales conversation` — alone, without a prospect, it becomes `Sales call`.
 * The integrator's callTitle is never used (spec, title rule 1).
 *
 * Summary, 1–3 sentences: who spoke with whom about which topics; the objections and how many were
 * answered; whether a next step was agreed. A very short transcript says so in place of a sentence.
 */
import type { ScoreComponent } from '../../ports/analyser.ts';
import { mainProspect, repDisplayName, SHORT_TRANSCRIPT_WORDS, type CallFacts } from './call-facts.ts';
import type { ObjectionCategory, Topic } from './conversation-signals.ts';
import { truncateChars } from '../../domain/submission/truncate-utf8.ts';

/** A title is cut to this many characters (code points, so never inside a surrogate pair). */
export const MAX_TITLE_CHARS = 120;

const OBJECTION_HEADLINE: Record<ObjectionCategory, string> = {
  price: 'Pricing objection',
  timing: 'Timing objection',
  competitor: 'Competitor objection',
  doubt: 'Open concerns',
};
const OBJECTION_NOUN: Record<ObjectionCategory, string> = {
  price: 'pricing',
  timing: 'timing',
  competitor: 'competitor',
  doubt: 'uncertainty',
};
const TOPIC_HEADLINE: Record<Topic, string> = {
  pricing: 'Pricing discussion',
  demo: 'Product demo',
  onboarding: 'Onboarding plan',
  renewal: 'Renewal discussion',
  integration: 'Integration review',
  security: 'Security review',
  contract: 'Contract negotiation',
  competition: 'Competitive evaluation',
  discovery: 'Discovery call',
};
const TOPIC_NOUN: Record<Topic, string> = {
  pricing: 'pricing',
  demo: 'a product demo',
  onboarding: 'onboarding',
  renewal: 'the renewal',
  integration: 'integrations',
  security: 'security',
  contract: 'the contract',
  competition: 'competitors',
  discovery: 'their current process and goals',
};

const nextStepMentioned = (components: ScoreComponent[]): boolean =>
  (components.find((c) => c.name === 'next_steps')?.score ?? 0) >= 60;

/** Topics worth naming, most mentioned first: ≥ 2 mentions; discovery only when nothing else is. */
const mainTopics = (facts: CallFacts): Topic[] => {
  const named = facts.topics.filter((t) => t.mentions >= 2).map((t) => t.topic);
  const specific = named.filter((t) => t !== 'discovery');
  return specific.length > 0 ? specific : named;
};

const dominantObjection = (facts: CallFacts): ObjectionCategory | undefined => {
  const counts = new Map<ObjectionCategory, number>();
  for (const o of facts.objections) counts.set(o.category, (counts.get(o.category) ?? 0) + 1);
  let best: ObjectionCategory | undefined;
  for (const [category, n] of counts) if (best === undefined || n > counts.get(best)!) best = category;
  return best;
};

const list = (items: string[]): string =>
  items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;

export const titleFor = (facts: CallFacts, components: ScoreComponent[]): string => {
  const prospect = mainProspect(facts)?.name;
  const steps = nextStepMentioned(components) ? ' and next steps' : '';
  const objection = dominantObjection(facts);
  const topic = mainTopics(facts)[0];
  const headline = objection
    ? `${OBJECTION_HEADLINE[objection]}${steps}`
    : topic
      ? `${TOPIC_HEADLINE[topic]}${steps}`
      : 'Sales conversation';
  if (prospect) return truncateChars(`${headline} with ${prospect}`, MAX_TITLE_CHARS);
  return headline === 'Sales conversation' ? 'Sales call' : headline;
};

export const summarise = (facts: CallFacts, components: ScoreComponent[], repName: string | undefined): string => {
  const topics = mainTopics(facts)
    .slice(0, 3)
    .map((t) => TOPIC_NOUN[t]);
  const about = topics.length > 0 ? ` about ${list(topics)}` : '';
  const sentences: string[] = [];

  if (facts.rep) {
    const others = facts.parsed.speakers.filter((s) => s.role !== 'rep');
    const more = others.length > 3 ? ` and ${others.length - 3} more` : '';
    sentences.push(
      `${repDisplayName(facts, repName)} spoke with ${list(others.slice(0, 3).map((s) => s.name)) + more}${about}.`,
    );
  } else {
    sentences.push(`An unlabelled transcript of ${facts.totalWords} words${about}.`);
  }
  if (facts.totalWords < SHORT_TRANSCRIPT_WORDS) {
    sentences.push(
      `The transcript is very short (${facts.totalWords} words), so the score carries little information.`,
    );
  }
  if (facts.objections.length > 0) {
    const who = mainProspect(facts)?.name ?? 'The prospect';
    const n = facts.objections.length;
    const answered = facts.objections.filter((o) => o.answered).length;
    const categories = [...new Set(facts.objections.map((o) => OBJECTION_NOUN[o.category]))];
    const raised =
      n === 1
        ? `${categories[0] === 'uncertainty' ? 'an' : 'a'} ${categories[0]} objection`
        : `${n} objections (${list(categories)})`;
    const outcome =
      answered === n
        ? n === 1
          ? 'it was answered'
          : 'all were answered'
        : answered === 0
          ? n === 1
            ? 'it went unanswered'
            : 'none was answered'
          : `${answered} of ${n} were answered`;
    sentences.push(`${who} raised ${raised}; ${outcome}.`);
  }
  const steps = facts.nextSteps;
  sentences.push(
    steps.agreed
      ? 'A next step was agreed with a concrete time.'
      : steps.actionTurns > 0
        ? 'A next step was mentioned without a date.'
        : 'No next step was agreed.',
  );
  return sentences.slice(0, 3).join(' ');
};
