/**
 * The word lists the conversation analyser looks for: questions, filler words, next steps,
 * objections and topics. English only; plain regular expressions, so a 500 KB transcript is read in
 * milliseconds. Each detector works on one sentence or one turn and is pure.
 */

/** Openers that make a sentence a question when the transcript carries no `?` at all (raw ASR). */
const QUESTION_OPENER =
  /^(?:what|how|why|when|where|who|which|could you|can you|would you|will you|do you|does|did you|are you|is there|is it|have you|has your|tell me|walk me through|help me understand)\b/i;
/** Open questions: they invite an answer longer than yes or no. */
const OPEN_QUESTION =
  /^(?:(?:so|and|but|okay|ok|now|then)[, ]+)?(?:what|how|why|tell me|walk me through|describe|help me understand|can you (?:tell|walk|describe|explain|share)|could you (?:tell|walk|describe|explain|share))\b/i;

/**
 * Whether a sentence is a question: it ends with `?` — or, in a transcript without any `?`
 * (`punctuated` false), it opens with a question word such as what, how, can you, tell me.
 */
export const isQuestion = (sentence: string, punctuated: boolean): boolean =>
  punctuated ? /\?["'”’)\]]*$/.test(sentence) : QUESTION_OPENER.test(sentence);

export const isOpenQuestion = (sentence: string): boolean => OPEN_QUESTION.test(sentence);

/**
 * Filler words: um, uh, er, erm, ah, hmm, basically, actually, literally always; "like", "you know"
 * and "I mean" only when a comma or the end of the sentence sets them off ("it's, like, fine",
 * "you know," — not "I'd like to" or "do you know").
 */
const FILLERS =
  /\b(?:u+m+|u+h+|uhm|erm|er|ah|hm+|basically|actually|literally)\b|\blike,|(?<!\b(?:do|did|don't|if|as|would|let)\s)\byou know(?=,|\s*[.!]|\s*$)|\bi mean,/gi;

const ANY_FILLER = new RegExp(FILLERS.source, 'i');
/** Whether a text has a filler word: the cheap test before `fillerWords`. */
export const hasFillerWords = (text: string): boolean => ANY_FILLER.test(text);

/** Filler words in a text, lower-cased, in order. */
export const fillerWords = (text: string): string[] =>
  Array.from(text.matchAll(FILLERS), (m) => m[0].toLowerCase().replace(/,$/, ''));

const ACTION =
  /\b(?:next steps?|follow[- ]?up|send (?:you|over|it over|them over|the (?:contract|proposal|deck|quote|pricing|invite|agreement|recording))|i'?ll send|calendar invite|(?:re)?schedule (?:a|the|another|some|our|time|it|that)|book (?:a|some|another) (?:time|call|meeting|demo|session)|set up (?:a|the|another|some) (?:call|meeting|demo|time|session|trial|pilot)|get back to you|touch base|reconvene|circle back)\b/i;
const MONTHS =
  'january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec';
const TIME_REFERENCE = new RegExp(
  String.raw`\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|next week|this week|end of (?:the )?(?:day|week|month)|eod|eow|this afternoon|(?:${MONTHS})\.? \d{1,2}(?:st|nd|rd|th)?|\d{1,2}(?:st|nd|rd|th)? of (?:${MONTHS})|\d{1,2}/\d{1,2}(?:/\d{2,4})?|\d{4}-\d{2}-\d{2}|\d{1,2}(?::\d{2})? ?(?:am|pm))\b`,
  'i',
);

/**
 * Next-step signals in one turn: an action (send, schedule, follow up…) and a concrete time.
 * With `alwaysTime` false the time is looked for only when there is an action (a speed-up for
 * callers that already know a time was mentioned somewhere).
 */
export const nextStepSignals = (text: string, alwaysTime = true): { action: boolean; time: boolean } => {
  const action = ACTION.test(text);
  return { action, time: action || alwaysTime ? TIME_REFERENCE.test(text) : false };
};

export type ObjectionCategory = 'price' | 'timing' | 'competitor' | 'doubt';

/** In order of precedence: a prospect turn counts as one objection, of the first category it raises. */
export const OBJECTION_CATEGORIES: ObjectionCategory[] = ['price', 'timing', 'competitor', 'doubt'];

const DOUBT =
  /\b(?:not sure|unsure|not convinced|(?<!\bno )concerns?|concerned|worried|worry|hesitant|skeptical|sceptical|risky|doubts?)\b/i;
const OBJECTIONS: Record<ObjectionCategory, RegExp> = {
  price:
    /\b(?:expensive|pricey|budgets?|afford|too (?:much|high|steep|costly)|cheaper|more than we (?:pay|budgeted|spend|expected))\b/i,
  timing:
    /\b(?:timing|not the right time|bad time|not a priority|not (?:a )?high priority|next (?:quarter|year|fiscal)|too busy|no bandwidth|not ready|revisit (?:this|it) later|(?:hiring|budget) freeze)\b/i,
  competitor:
    /\b(?:competitors?|already (?:use|using|have|work with|working with|signed with)|another (?:vendor|tool|provider|solution)|other vendors?|locked in|under contract with|switch(?:ing)? from)\b/i,
  doubt: DOUBT,
};
/** Price words that make an objection only with doubt in the same sentence ("worried about the price"). */
const PRICE_TOPIC = /\b(?:price|prices|pricing|cost|costs|fees?)\b/i;

/** An acknowledgement of the buyer's concern. */
const ACKNOWLEDGES =
  /\b(?:understand|understood|fair|makes sense|hear you|i get (?:it|that)|good question|great question|totally|appreciate|valid|of course|absolutely|no problem)\b/i;
/** Words that speak to a concern of each category. */
const ADDRESSES: Record<ObjectionCategory, RegExp> = {
  price:
    /\b(?:price|prices|pricing|cost|costs|budget|roi|return|value|discount|pilot|plan|seat|seats|invest(?:ment)?|pay(?:s|back)?)\b/i,
  timing: /\b(?:timing|timeline|quarter|priorit(?:y|ies)|later|next year|start small|pilot|phase|wait|calendar)\b/i,
  competitor:
    /\b(?:compare[ds]?|comparison|difference|differs?|unlike|switch(?:ing)?|migrat(?:e|ion)|alongside|replace)\b/i,
  doubt: /\b(?:pilot|trial|proof|reference|case study|guarantee|risk|start small|example|customers like)\b/i,
};

/**
 * Whether the rep's reply answers an objection: it asks a question back, or it has at least
 * `minWords` words and acknowledges the concern or speaks to it (price → cost, budget, ROI…).
 */
export const answersObjection = (
  category: ObjectionCategory,
  reply: { text: string; words: number; asks: boolean },
  minWords: number,
): boolean =>
  reply.asks || (reply.words >= minWords && (ACKNOWLEDGES.test(reply.text) || ADDRESSES[category].test(reply.text)));

/** Whether a text may raise an objection at all: one pass before the per-sentence, per-category look. */
const ANY_OBJECTION = new RegExp([...Object.values(OBJECTIONS), PRICE_TOPIC].map((r) => r.source).join('|'), 'i');
export const mayObject = (text: string): boolean => ANY_OBJECTION.test(text);

/** The objection categories a prospect sentence raises, in precedence order. */
export const objectionsIn = (sentence: string): ObjectionCategory[] =>
  OBJECTION_CATEGORIES.filter(
    (category) =>
      OBJECTIONS[category].test(sentence) ||
      (category === 'price' && PRICE_TOPIC.test(sentence) && DOUBT.test(sentence)),
  );

export type Topic =
  'pricing' | 'demo' | 'onboarding' | 'renewal' | 'integration' | 'security' | 'contract' | 'competition' | 'discovery';

/** In order of precedence when two topics are mentioned equally often. */
export const TOPICS: { topic: Topic; keywords: string }[] = [
  {
    topic: 'pricing',
    keywords: String.raw`price|prices|pricing|cost|costs|budget|discount|quote|expensive|per seat|per user|license fee|invoice`,
  },
  { topic: 'demo', keywords: String.raw`demo|demos|walkthrough|walk-through|show you|screen ?share|dashboard` },
  {
    topic: 'onboarding',
    keywords: String.raw`onboarding|onboard|implementation|implement|rollout|roll out|training|go-live|go live|kickoff|kick-off`,
  },
  { topic: 'renewal', keywords: String.raw`renewal|renew|renewing|expiring|expires|upsell|upgrade` },
  {
    topic: 'integration',
    keywords: String.raw`integration|integrations|integrate|api|apis|salesforce|hubspot|connector|webhooks?|sync`,
  },
  {
    topic: 'security',
    keywords: String.raw`security|soc ?2|gdpr|hipaa|iso 27001|compliance|sso|encryption|pen ?test|penetration test|data residency`,
  },
  {
    topic: 'contract',
    keywords: String.raw`contract|contracts|msa|redlines?|legal|procurement|signature|terms and conditions|purchase order`,
  },
  {
    topic: 'competition',
    keywords: String.raw`competitor|competitors|alternative|alternatives|compared to|comparison|versus|vs`,
  },
  {
    topic: 'discovery',
    keywords: String.raw`challenges?|pain points?|goals?|priorities|currently|process|workflow|bottlenecks?|tell me about`,
  },
];

/** All topics in one pass: one named group per topic. */
const TOPIC_PATTERN = new RegExp(
  String.raw`\b(?:${TOPICS.map(({ topic, keywords }) => `(?<${topic}>${keywords})`).join('|')})\b`,
  'gi',
);

/** Adds how often each topic's keywords occur in a text to `into`. */
export const topicMentions = (text: string, into: Map<Topic, number>): void => {
  TOPIC_PATTERN.lastIndex = 0;
  for (let match = TOPIC_PATTERN.exec(text); match !== null; match = TOPIC_PATTERN.exec(text)) {
    const groups = match.groups ?? {};
    const found = TOPICS.find(({ topic }) => groups[topic] !== undefined)?.topic;
    if (found) into.set(found, (into.get(found) ?? 0) + 1);
  }
};
