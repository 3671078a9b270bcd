/**
 * Analysis by any OpenAI-compatible chat completions endpoint (OpenAI, Azure-style gateways, vLLM,
 * llama.cpp, Ollama, LiteLLM…), asking for a JSON-schema answer and checking it before use.
 *
 * Request: POST `{url}/v1/chat/completions` with `response_format: { type: 'json_schema',
 * json_schema: { name: 'call_analysis', schema, strict: true } }`. The schema sent is `Analysis`
 * without `engine` (set here), with `speakers` required but nullable, and cut down to the subset
 * every strict-mode server accepts (no length, range or item-count keywords; literal unions as
 * `enum`). The model gets the cleaned transcript (cue timings and markup removed, one `Label: text`
 * line per turn) and the rep's name — not the rep's e-mail, and not the integrator's callTitle,
 * which must never become the title (spec, title rule 1). No `temperature` is sent: reasoning
 * models refuse any but the default.
 *
 * Acceptance: `choices[0].message.content` must parse as JSON, pass `Value.Check` against the full
 * schema (score an integer 0–100, component scores 0–100, weights 0–1, 2–6 insights, lengths), and
 * every insight's evidence must occur in the transcript (case, quotes and whitespace aside; a
 * trailing "…" allowed). Anything else is `analysis_invalid_response`, retriable: the same model
 * often answers correctly on the next attempt, and the processor's retries are bounded.
 *
 * Errors (StepError): HTTP 429 `analysis_rate_limited` and 5xx `analysis_unavailable` (retriable);
 * 408 and our own deadline `analysis_timeout` (retriable); unreachable `analysis_unavailable`
 * (retriable); any other 4xx, or a redirect, `analysis_rejected` (terminal). The API key is sent
 * only in the Authorization header and is scrubbed from every message; server error text is quoted
 * shortened and scrubbed.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import {
  AnalysisSchema,
  InsightSchema,
  ScoreComponentSchema,
  SpeakerSchema,
  type Analyser,
  type Analysis,
  type AnalysisInput,
} from '../../ports/analyser.ts';
import { StepError } from '../../ports/step-error.ts';
import {
  createScrubber,
  httpStatusError,
  openAiEndpoint,
  postToService,
  readCapped,
  serverMessage,
  type ServiceFailures,
} from '../openai-compatible.ts';
import { parseTranscript, renderTranscript } from './transcript-parser.ts';

export interface OpenAiAnalyserOptions {
  /** Base URL of the server, e.g. `https://api.openai.com` (a trailing `/v1` is accepted too). */
  url: string;
  /** Sent as `Authorization: Bearer …` when set; local servers often need none. */
  apiKey?: string | undefined;
  /** Model name, e.g. `gpt-4o-mini`. */
  model: string;
  /** Deadline for the whole exchange, answer body included. */
  timeoutMs: number;
}

/** Largest answer body read; a chat completion for one call is a few KB. */
const MAX_RESPONSE_BYTES = 2 * 1024 * 1024;
const MAX_QUOTED_ERROR_CHARS = 200;
/** Key-shaped tokens scrubbed from quoted text, besides the key itself. */
const KEY_SHAPED = /\b(?:sk|pk|rk)-[A-Za-z0-9_-]{6,}/g;

/** What the model must answer: `Analysis` without `engine`, `speakers` null when unknown. */
export const ModelAnswerSchema = Type.Object(
  {
    title: AnalysisSchema.properties.title,
    summary: AnalysisSchema.properties.summary,
    score: AnalysisSchema.properties.score,
    components: Type.Array(ScoreComponentSchema, { minItems: 1, maxItems: 12 }),
    insights: Type.Array(InsightSchema, {
      minItems: 2,
      maxItems: 6,
      description: '2 to 6 coaching insights, most important first.',
    }),
    speakers: Type.Union([Type.Array(SpeakerSchema, { maxItems: 50 }), Type.Null()], {
      description: 'Every labelled speaker, or null when the transcript has no speaker labels.',
    }),
  },
  { additionalProperties: false },
);

const UNSUPPORTED_IN_STRICT = new Set([
  'minLength',
  'maxLength',
  'pattern',
  'format',
  'minimum',
  'maximum',
  'minItems',
  'maxItems',
  '$id',
]);

/** A schema in the subset strict mode accepts everywhere (see the top of this file). */
export const toStrictSubset = (schema: unknown): unknown => {
  if (Array.isArray(schema)) return schema.map(toStrictSubset);
  if (schema === null || typeof schema !== 'object') return schema;
  const node = schema as Record<string, unknown>;
  const anyOf = node.anyOf;
  if (Array.isArray(anyOf) && anyOf.every((s) => typeof (s as { const?: unknown }).const === 'string')) {
    const out: Record<string, unknown> = { type: 'string', enum: anyOf.map((s) => (s as { const: string }).const) };
    if (typeof node.description === 'string') out.description = node.description;
    return out;
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) if (!UNSUPPORTED_IN_STRICT.has(k)) out[k] = toStrictSubset(v);
  return out;
};

const SYSTEM_PROMPT = `You analyse one recorded sales call between a sales rep and a prospect, for the rep's coaching.
Answer with JSON matching the call_analysis schema, and nothing else.
- title: at most 120 characters, generated from the conversation, e.g. "Pricing objection and next steps with Dana Reyes": the main topic or objection and the prospect's name as written in the transcript.
- summary: 1 to 3 sentences: who spoke, the topics, objections raised and whether they were answered, the next steps agreed.
- components: the scoring criteria you used, each {name (snake_case), value (the raw measure), score (integer 0-100), weight (0-1; the weights sum to 1), explanation}. Prefer talk_ratio (rep share of words, ideal 40-60%), questions_asked, longest_monologue (words; long monologues above ~150 words are worse), filler_words (per 100 words), next_steps (agreed with a concrete time), objection_handling (prospect objections answered).
- score: integer 0-100, the weighted mean of the component scores, rounded.
- insights: 2 to 6 coaching insights, most important first, each {kind: "strength" or "improvement", code (stable snake_case, e.g. talk_ratio_high), message (advice to the rep), evidence}. evidence MUST be one sentence copied exactly, character for character, from the transcript.
- speakers: every labelled speaker {name as written, role "rep" | "prospect" | "unknown", words (approximate word count)}, or null when the transcript has no speaker labels.`;

const normaliseQuote = (text: string): string =>
  text
    .toLowerCase()
    .replace(/[‘’`´]/g, "'")
    .replace(/[“”„]/g, '"')
    .replace(/\s+/g, ' ')
    .trim();

const evidenceKey = (evidence: string): string =>
  normaliseQuote(evidence)
    .replace(/^["']+|["']+$/g, '')
    .replace(/(?:…|\.\.\.)$/, '')
    .trim();

const firstError = (schema: TSchema, value: unknown): string => {
  const first = Value.Errors(schema, value).First();
  return first ? `${first.path || '/'}: ${first.message}` : 'it does not match the schema';
};

const readAnswer = (response: Response): Promise<string> =>
  readCapped(
    response,
    MAX_RESPONSE_BYTES,
    () =>
      new StepError(
        'analysis_invalid_response',
        `The analysis answer is larger than ${MAX_RESPONSE_BYTES} bytes.`,
        true,
      ),
  );

export const createOpenAiAnalyser = (options: OpenAiAnalyserOptions): Analyser => {
  const { origin: where, endpoint } = openAiEndpoint(options.url, 'chat/completions', 'analysis');
  const engine = `openai-compatible:${options.model}`;
  const wireSchema = toStrictSubset(ModelAnswerSchema);
  const secret = options.apiKey;
  const scrub = createScrubber(secret, MAX_QUOTED_ERROR_CHARS, KEY_SHAPED);
  const service: ServiceFailures = {
    what: 'analysis',
    where,
    rateLimited: 'analysis_rate_limited',
    timeout: 'analysis_timeout',
    unavailable: 'analysis_unavailable',
    rejected: 'analysis_rejected',
    scrub,
  };

  const invalid = (why: string, cause?: unknown): StepError =>
    new StepError(
      'analysis_invalid_response',
      `The analysis model at ${where} gave an unusable answer: ${scrub(why)}`,
      true,
      cause === undefined ? undefined : { cause },
    );

  const httpError = async (response: Response): Promise<StepError> =>
    httpStatusError(service, response, serverMessage(await readAnswer(response).catch(() => ''), scrub));

  const accept = (content: string, transcript: string): Analysis => {
    let answer: unknown;
    try {
      answer = JSON.parse(content.trim().replace(/^```(?:json)?\s*|\s*```$/g, ''));
    } catch (error) {
      throw invalid('the message content is not JSON', error);
    }
    if (!Value.Check(ModelAnswerSchema, answer)) throw invalid(firstError(ModelAnswerSchema, answer));
    const { speakers, ...rest } = answer;
    const analysis: Analysis = { ...rest, title: rest.title.trim(), summary: rest.summary.trim(), engine };
    if (speakers !== null) analysis.speakers = speakers;
    // Again after trimming: a title of spaces passes the model schema but is blank.
    if (!Value.Check(AnalysisSchema, analysis)) throw invalid(firstError(AnalysisSchema, analysis));
    const haystack = normaliseQuote(transcript);
    const made = analysis.insights.findIndex(
      (i) => !haystack.includes(evidenceKey(i.evidence)) || evidenceKey(i.evidence) === '',
    );
    if (made >= 0) throw invalid(`/insights/${made}/evidence is not a quote from the transcript`);
    return analysis;
  };

  return {
    async analyse(input: AnalysisInput, callOptions?: { signal?: AbortSignal }): Promise<Analysis> {
      const caller = callOptions?.signal;
      caller?.throwIfAborted();
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
      const transcript = renderTranscript(parsed);
      const context = [
        input.repName?.trim() ? `Rep: ${input.repName.trim()}` : 'Rep: not named',
        input.callDate ? `Call date: ${input.callDate}` : undefined,
      ]
        .filter(Boolean)
        .join('\n');
      const body = {
        model: options.model,
        messages: [
          { role: 'system', content: SYSTEM_PROMPT },
          { role: 'user', content: `${context}\n\nTranscript:\n${transcript}` },
        ],
        response_format: {
          type: 'json_schema',
          json_schema: { name: 'call_analysis', schema: wireSchema, strict: true },
        },
      };
      const text = await postToService(service, {
        endpoint,
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify(body),
        apiKey: secret,
        timeoutMs: options.timeoutMs,
        signal: caller,
        read: readAnswer,
        httpError,
      });

      let envelope: unknown;
      try {
        envelope = JSON.parse(text);
      } catch (error) {
        throw invalid('the response body is not JSON', error);
      }
      if (typeof envelope !== 'object' || envelope === null)
        throw invalid('the response body is not a chat completion');
      const choices = (envelope as { choices?: unknown }).choices;
      const choice = (Array.isArray(choices) ? choices[0] : undefined) as
        { message?: { content?: unknown; refusal?: unknown }; finish_reason?: unknown } | undefined;
      if (typeof choice?.message?.refusal === 'string' && choice.message.refusal)
        throw invalid(`the model refused: ${choice.message.refusal}`);
      if (choice?.finish_reason === 'length') throw invalid('the answer was cut off at the token limit');
      const content = choice?.message?.content;
      if (typeof content !== 'string' || content.trim() === '') throw invalid('choices[0].message.content is missing');
      return accept(content, transcript);
    },
    describe: () => `OpenAI-compatible analyser (model ${options.model} at ${where})`,
  };
};
