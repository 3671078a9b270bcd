/**
 * The measurements the conversation analyser scores, titles and coaches from, taken in one pass
 * over the parsed transcript. Pure. Every quoted `sentence` is a verbatim slice of one transcript
 * line, so it can serve as an insight's evidence.
 */
import {
  answersObjection,
  fillerWords,
  hasFillerWords,
  isOpenQuestion,
  isQuestion,
  nextStepSignals,
  mayObject,
  objectionsIn,
  OBJECTION_CATEGORIES,
  topicMentions,
  TOPICS,
  type ObjectionCategory,
  type Topic,
} from './conversation-signals.ts';
import type { ParsedTranscript, SpeakerInfo, Utterance } from './transcript-parser.ts';

export interface Objection {
  category: ObjectionCategory;
  /** Key of the prospect who raised it. */
  speaker: string;
  sentence: string;
  /**
   * The very next turn is the rep's and asks a question, or has ≥ `ANSWER_MIN_WORDS` words and
   * acknowledges the concern or speaks to it (`answersObjection`).
   */
  answered: boolean;
}

export interface CallFacts {
  parsed: ParsedTranscript;
  /** Absent when speakers are not known: then "the rep's" measures read the whole transcript. */
  rep?: SpeakerInfo;
  /** Speakers whose role is `prospect`, most words first. */
  prospects: SpeakerInfo[];
  totalWords: number;
  /** Words of the rep, or of the whole transcript when speakers are not known. */
  repWords: number;
  /** Rep's share of the labelled words in %, when speakers are known. */
  talkRatio?: number;
  /** The rep's question sentences, in order. */
  questions: string[];
  openQuestions: string[];
  /** The rep's longest turn, when speakers are known. */
  longestMonologue?: Utterance;
  fillers: { count: number; perHundredWords: number; byWord: Map<string, number>; worstSentence?: string };
  nextSteps: {
    /** Turns with an action phrase (send, schedule, follow up…). */
    actionTurns: number;
    /** A turn with both an action and a concrete time. */
    agreed: boolean;
    /** Any turn with a concrete time (weekday, date, tomorrow…). */
    timeMentioned: boolean;
    /** The sentence that best shows the next step: the last dated action, else the last action. */
    sentence?: string;
  };
  objections: Objection[];
  /** Topics by mentions, most first; ties in `TOPICS` order. */
  topics: { topic: Topic; mentions: number }[];
  /** Whether the transcript uses `?` at all (else questions are found by their opening words). */
  punctuated: boolean;
}

export const ANSWER_MIN_WORDS = 8;
/** Below this many words a transcript is analysed but flagged as saying little. */
export const SHORT_TRANSCRIPT_WORDS = 50;

const round1 = (n: number): number => Math.round(n * 10) / 10;

export const measureCall = (parsed: ParsedTranscript): CallFacts => {
  const { utterances, speakersKnown } = parsed;
  const rep = speakersKnown ? parsed.speakers.find((s) => s.key === parsed.rep) : undefined;
  const prospects = parsed.speakers.filter((s) => s.role === 'prospect').sort((a, b) => b.words - a.words);
  const prospectKeys = new Set(prospects.map((p) => p.key));
  const isRep = (u: Utterance): boolean => rep === undefined || u.speaker === rep.key;
  const punctuated = utterances.some((u) => u.text.includes('?'));

  let repWords = 0;
  let labelledWords = 0;
  let longestMonologue: Utterance | undefined;
  const questions: string[] = [];
  const openQuestions: string[] = [];
  const byWord = new Map<string, number>();
  let fillerCount = 0;
  let worst: { sentence: string; count: number } | undefined;
  const nextSteps: CallFacts['nextSteps'] = { actionTurns: 0, agreed: false, timeMentioned: false };
  let datedActionSentence: string | undefined;
  let actionSentence: string | undefined;
  const objections: Objection[] = [];
  const topicCounts = new Map<Topic, number>();

  utterances.forEach((u, i) => {
    if (u.speaker !== undefined) labelledWords += u.words;
    topicMentions(u.text, topicCounts);

    const signals = nextStepSignals(u.text, !nextSteps.timeMentioned);
    if (signals.time) nextSteps.timeMentioned = true;
    if (signals.action) {
      nextSteps.actionTurns++;
      const actions = u.sentences.filter((s) => nextStepSignals(s).action);
      const dated = actions.find((s) => nextStepSignals(s).time);
      actionSentence = actions.at(-1) ?? u.sentences[0];
      if (signals.time) {
        nextSteps.agreed = true;
        // Prefer the latest sentence holding both; a turn that only pairs them across sentences
        // stands in until one does.
        if (dated !== undefined || datedActionSentence === undefined) datedActionSentence = dated ?? actionSentence;
      }
    }

    if (isRep(u)) {
      repWords += u.words;
      if (rep !== undefined && (longestMonologue === undefined || u.words > longestMonologue.words))
        longestMonologue = u;
      const hasFillers = hasFillerWords(u.text);
      for (const sentence of u.sentences) {
        if (isQuestion(sentence, punctuated)) {
          questions.push(sentence);
          if (isOpenQuestion(sentence)) openQuestions.push(sentence);
        }
        if (!hasFillers) continue;
        const fillers = fillerWords(sentence);
        if (fillers.length === 0) continue;
        fillerCount += fillers.length;
        for (const f of fillers) byWord.set(f, (byWord.get(f) ?? 0) + 1);
        if (worst === undefined || fillers.length > worst.count) worst = { sentence, count: fillers.length };
      }
    } else if (u.speaker !== undefined && prospectKeys.has(u.speaker) && mayObject(u.text)) {
      const raised = u.sentences.map((sentence) => ({ sentence, categories: objectionsIn(sentence) }));
      const category = OBJECTION_CATEGORIES.find((c) => raised.some((r) => r.categories.includes(c)));
      if (category !== undefined) {
        const next = utterances[i + 1];
        const answered =
          next !== undefined &&
          next.speaker === rep?.key &&
          answersObjection(
            category,
            { text: next.text, words: next.words, asks: next.sentences.some((s) => isQuestion(s, punctuated)) },
            ANSWER_MIN_WORDS,
          );
        const sentence = raised.find((r) => r.categories.includes(category))!.sentence;
        objections.push({ category, speaker: u.speaker, sentence, answered });
      }
    }
  });

  const sentence = datedActionSentence ?? actionSentence;
  const topics = [...topicCounts].map(([topic, mentions]) => ({ topic, mentions }));
  const order = TOPICS.map((t) => t.topic);
  topics.sort((a, b) => b.mentions - a.mentions || order.indexOf(a.topic) - order.indexOf(b.topic));

  return {
    parsed,
    ...(rep ? { rep } : {}),
    prospects,
    totalWords: parsed.totalWords,
    repWords,
    ...(rep && labelledWords > 0 ? { talkRatio: round1((100 * rep.words) / labelledWords) } : {}),
    questions,
    openQuestions,
    ...(longestMonologue ? { longestMonologue } : {}),
    fillers: {
      count: fillerCount,
      perHundredWords: repWords === 0 ? 0 : round1((100 * fillerCount) / repWords),
      byWord,
      ...(worst ? { worstSentence: worst.sentence } : {}),
    },
    nextSteps: sentence === undefined ? nextSteps : { ...nextSteps, sentence },
    objections,
    topics,
    punctuated,
  };
};

/** How the rep is named in prose: a person's label, else the given rep name, else "The rep". */
export const repDisplayName = (facts: CallFacts, repName: string | undefined): string =>
  facts.rep?.isPersonName ? facts.rep.name : repName?.trim() || 'The rep';

/** The prospect a call is "with": the prospect with a person's name who spoke most. */
export const mainProspect = (facts: CallFacts): SpeakerInfo | undefined => facts.prospects.find((p) => p.isPersonName);
