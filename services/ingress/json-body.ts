/**
 * The body parser of every route: JSON only, sent uncompressed, and a refusal that names its field
 * and rule (every 4xx carries `errors[]`, docs/decisions/0002-problem-json-errors.md). Fastify's own
 * parser answers every refusal, a "__proto__" key included, with the same "not valid JSON".
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import secureJson from 'secure-json-parse';
import { ProblemError } from './errors.ts';
import { rememberRawBody } from './raw-body.ts';

const malformed = (detail: string, field: string, message: string): ProblemError =>
  new ProblemError('MALFORMED_JSON', detail, { errors: [{ field, message }] });

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;

/**
 * The path of the first place in `value`, depth first and in order, whose value and key `found`
 * takes ("metadata.__proto__", "items[2]"), or undefined.
 */
const pathWhere = (value: unknown, found: (child: unknown, key: string) => boolean, path = ''): string | undefined => {
  const entries: Array<[string, unknown, string]> = Array.isArray(value)
    ? value.map((item, i) => [String(i), item, `${path}[${i}]`])
    : isObject(value)
      ? Object.entries(value).map(([key, child]) => [key, child, path ? `${path}.${key}` : key])
      : [];
  for (const [key, child, here] of entries) {
    if (found(child, key)) return here;
    const deeper = pathWhere(child, found, here);
    if (deeper) return deeper;
  }
  return undefined;
};

/**
 * Where the first key the parser refuses sits ("metadata.__proto__", "items[2].constructor"): a
 * "__proto__" key, or a "constructor" key holding an object with "prototype". Only read on a
 * refusal; `JSON.parse` keeps such keys as plain own properties, so the walk sees them.
 */
export const poisonedKeyPath = (text: string): string => {
  const poisoned = (child: unknown, key: string) =>
    key === '__proto__' || (key === 'constructor' && isObject(child) && Object.hasOwn(child, 'prototype'));
  try {
    return pathWhere(JSON.parse(text), poisoned) ?? 'body';
  } catch {
    return 'body';
  }
};

/**
 * A number literal a 64-bit double cannot hold: below the smallest subnormal (about 4.9e-324) a
 * non-zero literal such as `1e-400` parses as 0, which every rule would then take for a real 0.
 * Only a literal with a negative exponent of three digits or more, or a fraction beginning with
 * hundreds of zeros, can underflow; a body with neither (nearly every body) is not looked at again.
 */
const MAY_UNDERFLOW = /[eE]-0*[1-9]\d{2}|\.0{300}/;
const UNDERFLOWED = Symbol('underflowed');

/**
 * Where the first number literal sits that is not 0 but parses as 0 ("dealSize", "metadata.tiny",
 * "items[2]"), or undefined. Reads the literal's own text (`JSON.parse`'s source text access).
 */
export const underflowedNumberPath = (text: string): string | undefined => {
  if (!MAY_UNDERFLOW.test(text)) return undefined;
  let any = false;
  const marked = JSON.parse(text, (_key, value: unknown, context?: { source?: string }) => {
    if (value !== 0 || context?.source === undefined) return value;
    const mantissa = context.source.split(/[eE]/)[0] ?? '';
    if (!/[1-9]/.test(mantissa)) return value;
    any = true;
    return UNDERFLOWED;
  }) as unknown;
  if (!any) return undefined;
  return marked === UNDERFLOWED ? 'body' : pathWhere(marked, (child) => child === UNDERFLOWED);
};

const UNDERFLOW_RULE =
  'is a number too small for a 64-bit double: it would read as 0; send 0 (in metadata, a string keeps it as sent)';

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The body's text, or undefined when its bytes are not UTF-8 (RFC 8259: JSON exchanged between
 * systems is UTF-8). Decoded leniently, a stray byte became U+FFFD and the call was stored with a
 * character its sender never wrote; a leading byte order mark is dropped, as RFC 8259 allows.
 */
const utf8Text = (bytes: Buffer): string | undefined => {
  try {
    return UTF8.decode(bytes);
  } catch {
    return undefined;
  }
};

/**
 * The offset of the first byte of `bytes` that is not part of a UTF-8 character. Lenient decoding
 * puts one U+FFFD where it meets one; every U+FFFD before it stands for the three bytes that encode
 * U+FFFD itself, so the text before it is as many bytes long as the body before that byte.
 */
export const firstNonUtf8Byte = (bytes: Buffer): number => {
  const text = bytes.toString('utf8');
  let bytesBefore = 0;
  let from = 0;
  for (let at = text.indexOf('\uFFFD'); at !== -1; at = text.indexOf('\uFFFD', at + 1)) {
    bytesBefore += Buffer.byteLength(text.slice(from, at));
    from = at;
    if (!(bytes[bytesBefore] === 0xef && bytes[bytesBefore + 1] === 0xbf && bytes[bytesBefore + 2] === 0xbd))
      return bytesBefore;
  }
  return -1;
};

/** The charset a Content-Type names ("utf-8" from `application/json; Charset="UTF-8"`), or undefined. */
export const charsetOf = (contentType: string): string | undefined => {
  for (const parameter of contentType.split(';').slice(1)) {
    const [name, ...value] = parameter.split('=');
    if (name?.trim().toLowerCase() === 'charset')
      return value
        .join('=')
        .trim()
        .replace(/^"(.*)"$/, '$1')
        .toLowerCase();
  }
  return undefined;
};

/** Whether the request carries a body Fastify reads: not a GET or HEAD, and a length other than 0. */
const sendsBody = (request: FastifyRequest): boolean => {
  if (request.method === 'GET' || request.method === 'HEAD') return false;
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
};

export const registerJsonBodyParser = (app: FastifyInstance): void => {
  // Identity only: a compressed body would be read as text and refused as malformed JSON, quoting
  // its bytes back. Refused before it is read, after the key's checks (401 → 429 → 415 → 413,
  // docs/decisions/0001-answer-order-and-limits.md), and before it waits for the body budget.
  app.addHook('preParsing', async (request, _reply, payload) => {
    if (!sendsBody(request)) return payload;
    // UTF-8 only (RFC 8259): a body in another charset would be read as UTF-8 and its text changed.
    const contentType = request.headers['content-type'] ?? '';
    const charset = charsetOf(contentType);
    const json = contentType.split(';')[0]!.trim().toLowerCase() === 'application/json';
    if (json && charset !== undefined && charset !== 'utf-8' && charset !== 'utf8')
      throw new ProblemError(
        'UNSUPPORTED_MEDIA_TYPE',
        `Content-Type charset "${charset}" is not accepted: send the body as UTF-8 (charset=utf-8, or no charset).`,
        { errors: [{ field: 'Content-Type', message: 'charset must be utf-8: JSON bodies are UTF-8' }] },
      );
    const encoding = request.headers['content-encoding'];
    if (encoding === undefined) return payload;
    const codings = encoding.split(',').map((coding) => coding.trim().toLowerCase());
    if (codings.every((coding) => coding === 'identity' || coding === '')) return payload;
    throw new ProblemError(
      'UNSUPPORTED_MEDIA_TYPE',
      `Content-Encoding "${encoding}" is not accepted: send the body uncompressed (identity).`,
      { errors: [{ field: 'Content-Encoding', message: 'must be identity: only an uncompressed body is accepted' }] },
    );
  });
  // JSON only: anything else is a 415, not a string body the rules would then reject as a 400.
  app.removeContentTypeParser('text/plain');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const bytes = body as Buffer;
    const text = utf8Text(bytes);
    if (text === undefined) {
      const at = firstNonUtf8Byte(bytes);
      return done(
        malformed(
          `The body is not UTF-8: the byte at offset ${at} is not part of a UTF-8 character. Send JSON encoded as UTF-8.`,
          'body',
          `is not UTF-8: the byte at offset ${at} is not part of a UTF-8 character`,
        ),
      );
    }
    // The Idempotency-Key compares bodies by their bytes (raw-body.ts).
    if (request.headers['idempotency-key'] !== undefined) rememberRawBody(request, text);
    if (text.trim() === '') {
      // A route that takes no body (a DELETE, an operator's action) is not refused for the header alone.
      if (request.routeOptions.schema?.body === undefined) return done(null, undefined);
      return done(malformed('The body is empty; send a JSON object.', 'body', 'is empty; send a JSON object'));
    }
    try {
      const parsed: unknown = secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
      const underflowed = underflowedNumberPath(text);
      if (underflowed !== undefined)
        return done(
          new ProblemError('VALIDATION_FAILED', `${underflowed} ${UNDERFLOW_RULE}.`, {
            errors: [{ field: underflowed, message: UNDERFLOW_RULE }],
          }),
        );
      done(null, parsed);
    } catch (error) {
      const reason = (error as Error).message;
      if (!/prototype/i.test(reason))
        return done(malformed(`The body is not valid JSON: ${reason}.`, 'body', `is not valid JSON: ${reason}`));
      const field = poisonedKeyPath(text);
      done(
        malformed(
          `The body has a "__proto__" key, or a "constructor" key holding "prototype", at ${field}: such keys are refused.`,
          field,
          'is a "__proto__" key, or a "constructor" key holding "prototype": such keys are refused',
        ),
      );
    }
  });
};
