/**
 * What the adapters for OpenAI-compatible HTTP APIs (chat completions for analysis, audio
 * transcriptions for transcription) share: the endpoint URL, the capped answer read, scrubbing of
 * secrets from quoted text, the server's own error message, the HTTP status → StepError mapping and
 * the POST with a deadline and the caller's abort signal.
 *
 * Each adapter keeps its own error codes, limits and wording; they come in as parameters here.
 */
import type { ReadableStreamReadResult } from 'node:stream/web';
import { StepError } from '../ports/step-error.ts';

/**
 * The ports fetch never connects to (the Fetch standard's "bad ports", fetch.spec.whatwg.org
 * #port-blocking): a request to one fails with "bad port" before it is sent, every time.
 */
export const FETCH_BAD_PORTS: ReadonlySet<number> = new Set([
  1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109, 110,
  111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532,
  540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061,
  6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
]);

/**
 * The server's origin (for messages), and `{origin}{prefix}/v1/{path}` where `prefix` is the path of
 * `url` with a trailing `/v1` tolerated.
 * @param what names the URL in errors, e.g. `analysis` → "analysis URL must be http(s)…".
 * @throws TypeError when `url` is not an http(s) URL, carries a user or password, or names a port
 * fetch refuses (which would fail every call, long after the start).
 */
export const openAiEndpoint = (url: string, path: string, what: string): { origin: string; endpoint: URL } => {
  const parsed = new URL(url);
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new TypeError(`${what} URL must be http(s), got ${parsed.protocol}`);
  if (parsed.username || parsed.password)
    throw new TypeError(`${what} URL must not carry credentials; pass the key as apiKey`);
  if (FETCH_BAD_PORTS.has(Number(parsed.port)))
    throw new TypeError(
      `${what} URL names port ${parsed.port}, one that fetch never connects to (the Fetch standard's blocked ports); serve it on another port`,
    );
  const prefix = parsed.pathname.replace(/\/+$/, '').replace(/\/v1$/, '');
  return { origin: parsed.origin, endpoint: new URL(`${parsed.origin}${prefix}/v1/${path}`) };
};

/**
 * A function that removes `secret`, anything matching `keyShapes` (a global regex for key-shaped
 * tokens) and any `Bearer …` token from text we pass on, then cuts it to `maxChars` plus "…".
 */
export const createScrubber =
  (secret: string | undefined, maxChars: number, keyShapes: RegExp) =>
  (text: string): string => {
    let out = secret ? text.split(secret).join('[redacted]') : text;
    out = out.replace(keyShapes, '[redacted]').replace(/Bearer\s+\S+/gi, 'Bearer [redacted]');
    return out.length > maxChars ? `${out.slice(0, maxChars)}…` : out;
  };

/** The body of `response` as UTF-8 text; past `maxBytes` the read is cancelled and `tooLarge()` thrown. */
export const readCapped = async (response: Response, maxBytes: number, tooLarge: () => Error): Promise<string> => {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = (await reader.read()) as ReadableStreamReadResult<Uint8Array>;
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
};

export interface ServerMessageOptions {
  /** Also take a top-level `detail` string (FastAPI-style servers). */
  detail?: boolean;
  /** Quote a body that is not JSON as it is, unless it looks like HTML. */
  plainText?: boolean;
}

/**
 * The server's error message from an error body, as `: <message>` scrubbed, or '' when there is
 * none: `error` (a string) or `error.message`, else `message` (else `detail`, when asked).
 */
export const serverMessage = (
  body: string,
  scrub: (text: string) => string,
  options: ServerMessageOptions = {},
): string => {
  try {
    const parsed = JSON.parse(body) as { error?: { message?: unknown } | string; message?: unknown; detail?: unknown };
    const message =
      typeof parsed.error === 'string'
        ? parsed.error
        : (parsed.error?.message ?? parsed.message ?? (options.detail ? parsed.detail : undefined));
    return typeof message === 'string' && message.trim() ? `: ${scrub(message.trim())}` : '';
  } catch {
    if (!options.plainText) return '';
    return body.trim() && !body.trimStart().startsWith('<') ? `: ${scrub(body.trim())}` : '';
  }
};

/** How one adapter names its service in messages, and the StepError codes of its failures. */
export interface ServiceFailures {
  /** Messages read "The {what} service at {where} …", e.g. `analysis`. */
  what: string;
  /** The server's origin. */
  where: string;
  /** HTTP 429 (retriable). */
  rateLimited: string;
  /** HTTP 408, and our own deadline (retriable). */
  timeout: string;
  /** HTTP 5xx, and a server that cannot be reached (retriable). */
  unavailable: string;
  /** A redirect, or any other 4xx (terminal). */
  rejected: string;
  /** Applied to text from the server or the network. */
  scrub: (text: string) => string;
}

/** The StepError for a non-2xx `response`; `said` is the server's message as `serverMessage` gives it. */
export const httpStatusError = (service: ServiceFailures, response: Response, said: string): StepError => {
  const { what, where } = service;
  const status = `HTTP ${response.status}`;
  if (response.status === 429) {
    const retryAfter = response.headers.get('retry-after');
    return new StepError(
      service.rateLimited,
      `The ${what} service at ${where} is rate limiting (${status}${retryAfter ? `, Retry-After ${service.scrub(retryAfter)}` : ''})${said}.`,
      true,
    );
  }
  if (response.status === 408)
    return new StepError(service.timeout, `The ${what} service at ${where} timed out (${status})${said}.`, true);
  if (response.status >= 500)
    return new StepError(service.unavailable, `The ${what} service at ${where} failed (${status})${said}.`, true);
  if (response.status >= 300 && response.status < 400) {
    return new StepError(
      service.rejected,
      `The ${what} service at ${where} answered with a redirect (${status}); configure the final URL.`,
      false,
    );
  }
  return new StepError(
    service.rejected,
    `The ${what} service at ${where} refused the request (${status})${said}.`,
    false,
  );
};

export interface ServiceRequest {
  endpoint: URL;
  headers: Record<string, string>;
  body: RequestInit['body'];
  /** Sent as `Authorization: Bearer …` when set, and nowhere else. */
  apiKey: string | undefined;
  /** Deadline for the whole exchange, answer body included. */
  timeoutMs: number;
  /** The caller's signal: when it aborts, its reason is thrown as it is. */
  signal: AbortSignal | undefined;
  /** Reads a 2xx answer (capped). */
  read: (response: Response) => Promise<string>;
  /** The StepError for any other answer; redirects are not followed. */
  httpError: (response: Response) => Promise<StepError>;
}

/**
 * POSTs `request` and returns the answer body. Throws the caller's abort reason, a StepError from
 * `read` or `httpError`, `service.timeout` when the deadline passes, or `service.unavailable` when
 * the server cannot be reached.
 */
export const postToService = async (service: ServiceFailures, request: ServiceRequest): Promise<string> => {
  const { what, where } = service;
  const caller = request.signal;
  const deadline = AbortSignal.timeout(request.timeoutMs);
  const signal = caller ? AbortSignal.any([caller, deadline]) : deadline;
  const headers = { ...request.headers };
  if (request.apiKey) headers.authorization = `Bearer ${request.apiKey}`;
  try {
    const response = await fetch(request.endpoint, {
      method: 'POST',
      headers,
      body: request.body,
      signal,
      redirect: 'manual',
    });
    if (!response.ok) throw await request.httpError(response);
    return await request.read(response);
  } catch (error) {
    if (caller?.aborted) throw caller.reason;
    if (error instanceof StepError) throw error;
    if (deadline.aborted) {
      throw new StepError(
        service.timeout,
        `The ${what} service at ${where} did not answer within ${request.timeoutMs} ms.`,
        true,
        { cause: error },
      );
    }
    const reason =
      error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error);
    throw new StepError(
      service.unavailable,
      `The ${what} service at ${where} could not be reached: ${service.scrub(reason)}`,
      true,
      { cause: error },
    );
  }
};
