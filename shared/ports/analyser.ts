/**
 * Analyser port: turns one call's transcript into what call history shows — an AI-style title, a
 * short summary, a 0–100 score with the components it is made of, and coaching insights that each
 * quote the transcript line they rest on.
 *
 * Adapters: the built-in deterministic conversation analyser (`createConversationAnalyser`) and any
 * OpenAI-compatible chat endpoint (`createOpenAiAnalyser`); `selectAnalyser` picks one from config.
 *
 * Failures are `StepError`s (`shared/ports/step-error.ts`) with one of `AnalysisErrorCode`.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { TranscriptSegment } from '../domain/transcript/transcript-segments.ts';

/** What is analysed. Only `transcript` is required. */
export interface AnalysisInput {
  /** The call's text: plain, speaker-labelled (`Dana: …`), or WebVTT/SRT with cues still in. */
  transcript: string;
  /**
   * The transcript's segments. When some name their speaker (an engine that tells speakers apart,
   * WebVTT `<v Name>` cues), the speaker turns are read from them instead of the text's labels.
   */
  segments?: readonly TranscriptSegment[];
  /** The rep's full name; picks the rep among the speaker labels (full or first name). */
  repName?: string;
  /** The rep's e-mail; its local part (`dana.reyes@…`) is a fallback hint for the rep's label. */
  repEmail?: string;
  /** ISO date of the call. Context only. */
  callDate?: string;
  /**
   * The integrator's title. Never used as the generated title (spec, title rule 1): adapters
   * ignore it, and the remote one does not send it to the model.
   */
  callTitle?: string;
}

export const ScoreComponentSchema = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 64, description: 'Stable snake_case name, e.g. `talk_ratio`.' }),
    value: Type.Number({ description: 'The raw measure, e.g. 72.5 (% of words) or 4 (questions).' }),
    score: Type.Integer({ minimum: 0, maximum: 100, description: 'This component on a 0–100 scale.' }),
    weight: Type.Number({
      minimum: 0,
      maximum: 1,
      description: 'Share of the overall score; the weights of one analysis sum to 1.',
    }),
    explanation: Type.String({
      minLength: 1,
      maxLength: 500,
      description: 'How the value was measured and scored, for a person.',
    }),
  },
  { additionalProperties: false },
);
export type ScoreComponent = Static<typeof ScoreComponentSchema>;

export const InsightSchema = Type.Object(
  {
    kind: Type.Union([Type.Literal('strength'), Type.Literal('improvement')]),
    code: Type.String({
      minLength: 1,
      maxLength: 64,
      pattern: '^[a-z][a-z0-9_]*$',
      description: 'Stable snake_case code, e.g. `talk_ratio_high`.',
    }),
    message: Type.String({ minLength: 1, maxLength: 500, description: 'The coaching advice, for the rep.' }),
    evidence: Type.String({
      minLength: 1,
      maxLength: 300,
      description: 'The transcript line the insight rests on, quoted verbatim (may be shortened with a trailing "…").',
    }),
  },
  { additionalProperties: false },
);
export type Insight = Static<typeof InsightSchema>;

export const SpeakerSchema = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100, description: 'The speaker label as written in the transcript.' }),
    role: Type.Union([Type.Literal('rep'), Type.Literal('prospect'), Type.Literal('unknown')]),
    words: Type.Integer({ minimum: 0, description: 'Words this speaker said.' }),
  },
  { additionalProperties: false },
);
export type Speaker = Static<typeof SpeakerSchema>;

/** The analysis of one call, as stored and shown in call history. */
export const AnalysisSchema = Type.Object(
  {
    title: Type.String({
      minLength: 1,
      maxLength: 120,
      description: "Generated from the transcript, never the integrator's callTitle.",
    }),
    summary: Type.String({
      minLength: 1,
      maxLength: 1000,
      description: '1–3 sentences: who spoke, topics, objections, next steps.',
    }),
    score: Type.Integer({
      minimum: 0,
      maximum: 100,
      description: 'Overall call score: the weighted mean of the component scores, rounded.',
    }),
    components: Type.Array(ScoreComponentSchema, { minItems: 1, maxItems: 12 }),
    insights: Type.Array(InsightSchema, {
      minItems: 2,
      maxItems: 6,
      description: 'Coaching insights, most important first.',
    }),
    speakers: Type.Optional(
      Type.Array(SpeakerSchema, { maxItems: 50, description: 'Absent when the transcript carries no speaker labels.' }),
    ),
    engine: Type.String({
      minLength: 1,
      maxLength: 200,
      description: 'Which analyser produced this, e.g. `conversation-analyser/1` or `openai-compatible:gpt-4o-mini`.',
    }),
  },
  { additionalProperties: false, $id: 'Analysis' },
);
export type Analysis = Static<typeof AnalysisSchema>;

/**
 * The `StepError` codes an analyser raises.
 * - `transcript_empty` (terminal): nothing but whitespace, cue timings or markup after cleaning.
 * - `analysis_invalid_response` (retriable): the remote answer was not JSON or broke the schema; a
 *   model may well answer correctly on the next attempt.
 * - `analysis_rate_limited` (retriable): HTTP 429.
 * - `analysis_unavailable` (retriable): unreachable, or HTTP 5xx.
 * - `analysis_timeout` (retriable): no complete answer in time.
 * - `analysis_rejected` (terminal): any other HTTP 4xx (bad key, unknown model, request refused).
 */
export type AnalysisErrorCode =
  | 'transcript_empty'
  | 'analysis_invalid_response'
  | 'analysis_rate_limited'
  | 'analysis_unavailable'
  | 'analysis_timeout'
  | 'analysis_rejected';

export interface Analyser {
  /**
   * Analyses one call.
   * @throws StepError with an `AnalysisErrorCode`.
   * @throws the signal's reason when `options.signal` aborts (not a StepError: the caller gave up).
   */
  analyse(input: AnalysisInput, options?: { signal?: AbortSignal }): Promise<Analysis>;

  /** One line for logs and health output, e.g. which model at which host. Never contains secrets. */
  describe(): string;

  /**
   * True when it runs in this process and waits on nothing outside it (no network, no engine): its
   * answer comes in milliseconds, so the processor records the analysis together with the steps
   * around it instead of showing the call at stage `analysing` first.
   */
  readonly inProcess?: boolean;
}
