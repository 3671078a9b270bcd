/** Topics of the event log. Keys are call ids; values are JSON; headers follow the CloudEvents Kafka binding. */
export const TOPICS = {
  /** One record per accepted submission (CallSubmitted), written by the ingress before it answers 201. */
  callsSubmitted: 'calls.submitted.v1',
  /** Every call event, relayed from the event store for downstream systems. */
  callEvents: 'calls.events.v1',
  /** deal.outcome.updated, after the deal record is written. */
  dealOutcomeUpdated: 'deals.outcome-updated.v1',
  /** Records the processor could not parse, with the reason. */
  deadLetter: 'calls.dead-letter.v1',
} as const;

export const ALL_TOPICS = Object.values(TOPICS);
