import type { TopicSpec } from './ports/event-log.ts';

/** Topics of the event log. Keys are call ids; values are JSON; headers follow the CloudEvents Kafka binding. */
export interface Topics {
  /** One record per accepted submission (CallSubmitted), written by the ingress before it answers 201. */
  callsSubmitted: string;
  /** Every call event, relayed from the event store for downstream systems. */
  callEvents: string;
  /** deal.outcome.updated, after the deal record is written. */
  dealOutcomeUpdated: string;
  /** Records the processor could not parse, with the reason. */
  deadLetter: string;
}

/** The topic names, each behind an optional prefix (TOPIC_PREFIX) so several deployments can share a cluster. */
export const topicNames = (prefix = ''): Topics => ({
  callsSubmitted: `${prefix}calls.submitted.v1`,
  callEvents: `${prefix}calls.events.v1`,
  dealOutcomeUpdated: `${prefix}deals.outcome-updated.v1`,
  deadLetter: `${prefix}calls.dead-letter.v1`,
});

/** The prefix the topic names were made with (consumer groups carry it too). */
export const topicPrefix = (topics: Topics): string => topics.callsSubmitted.slice(0, -'calls.submitted.v1'.length);

/** The default names (no prefix). */
export const TOPICS: Topics = topicNames();

export const allTopics = (topics: Topics): string[] => Object.values<string>({ ...topics });

/**
 * Every topic as `ensureTopics` makes it: `partitions` each, the dead-letter topic's records kept
 * whatever the log's retention (a dead letter is a call answered 201, waiting for a redrive).
 */
export const topicSpecs = (topics: Topics, partitions: number): TopicSpec[] =>
  allTopics(topics).map((name) => ({ name, partitions, ...(name === topics.deadLetter ? { keepRecords: true } : {}) }));
export const ALL_TOPICS = allTopics(TOPICS);

/**
 * The topic of this deployment that `asked` names: its name as the log knows it, or, behind a
 * TOPIC_PREFIX, its name without the prefix (as the README's topics table gives it). Undefined for
 * any other name: on a shared Kafka cluster that is another deployment's topic, not ours to read.
 */
export const deploymentTopic = (topics: Topics, asked: string): string | undefined => {
  const names = allTopics(topics);
  if (names.includes(asked)) return asked;
  const prefixed = `${topicPrefix(topics)}${asked}`;
  return names.includes(prefixed) ? prefixed : undefined;
};
