/**
 * Picks the analyser from configuration: an OpenAI-compatible endpoint when `analyseUrl` is set,
 * else the built-in deterministic conversation analyser. Reads no environment: `shared/config.ts`
 * does that once and passes the values in.
 */
import type { Analyser } from '../../ports/analyser.ts';
import { createConversationAnalyser } from './conversation-analyser.ts';
import { createOpenAiAnalyser } from './openai-analyser.ts';

export interface AnalyserConfig {
  /** Base URL of an OpenAI-compatible server (ANALYSE_URL); blank or absent → the built-in analyser. */
  analyseUrl?: string | undefined;
  /** Bearer key of that server (ANALYSE_API_KEY). */
  analyseApiKey?: string | undefined;
  /** Model name (ANALYSE_MODEL); required with analyseUrl. */
  analyseModel?: string | undefined;
  /** Deadline of one remote analysis; default `DEFAULT_ANALYSE_TIMEOUT_MS`. */
  timeoutMs?: number | undefined;
}

/** A long call through a large model can take a while; past this the attempt is retried. */
export const DEFAULT_ANALYSE_TIMEOUT_MS = 120_000;

/** @throws Error when analyseUrl is set without analyseModel, or is not an http(s) URL. */
export const selectAnalyser = (config: AnalyserConfig): Analyser => {
  const url = config.analyseUrl?.trim();
  if (!url) return createConversationAnalyser();
  const model = config.analyseModel?.trim();
  if (!model) throw new Error('analyseModel (ANALYSE_MODEL) is required when analyseUrl (ANALYSE_URL) is set');
  return createOpenAiAnalyser({
    url,
    apiKey: config.analyseApiKey?.trim() || undefined,
    model,
    timeoutMs: config.timeoutMs ?? DEFAULT_ANALYSE_TIMEOUT_MS,
  });
};
