/**
 * Structured logger (pino) for every service. API keys and tokens never reach a log line: auth
 * headers are redacted, and query-string values whose name looks like a credential (or whose value
 * looks like a Push API key) are replaced before a URL is logged; the ingress takes no X-Request-Id
 * that holds one (`holdsCredential`), since the request id is on every line.
 */
import { type DestinationStream, type Logger, pino } from 'pino';

const CREDENTIAL_PARAM = /(key|token|secret|auth|password)/i;
const API_KEY_LIKE = /pk_[A-Za-z0-9]+/;

/** Values this process holds as secrets (the admin token, say): never logged, however encoded. */
const secrets = new Set<string>();

/** Adds a secret that URLs in log lines must never show (only strings of 8 characters or more). */
export const registerSecretForRedaction = (value: string): void => {
  if (value.length >= 8) secrets.add(value);
};

/** A run of `%XX` escapes: decoded together, so a character of several UTF-8 bytes comes out whole. */
const ESCAPES = /(?:%[0-9A-Fa-f]{2})+/g;

/**
 * The text with every valid `%XX` escape decoded and any other `%` left as it is. Decoding the whole
 * text at once (`decodeURIComponent`) fails at one bad escape (`%ZZ`), which left the rest encoded:
 * `%70k_…` beside it was no key. Bytes that are not UTF-8 become U+FFFD.
 */
const decoded = (text: string): string =>
  text.includes('%')
    ? text.replace(ESCAPES, (run) => Buffer.from(run.replaceAll('%', ''), 'hex').toString('utf8'))
    : text;

/**
 * Whether a text holds a credential, as it is or once percent-decoded (`pk%5F…` is a key too): a
 * Push API key or a registered secret. URL parts and the caller's X-Request-Id are checked with it.
 */
export const holdsCredential = (text: string): boolean => {
  for (const plain of new Set([text, decoded(text)])) {
    if (API_KEY_LIKE.test(plain)) return true;
    for (const secret of secrets) if (plain.includes(secret)) return true;
  }
  return false;
};

/**
 * The URL with credentials replaced by `[redacted]`: the value of a query parameter whose name
 * looks like a credential, and any path segment or query name or value that holds an API key or a
 * registered secret after percent-decoding.
 */
export const redactUrl = (url: string): string => {
  const q = url.indexOf('?');
  const path = (q === -1 ? url : url.slice(0, q))
    .split('/')
    .map((segment) => (holdsCredential(segment) ? '[redacted]' : segment))
    .join('/');
  if (q === -1) return path;
  const params = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = eq === -1 ? pair : pair.slice(0, eq);
      const value = eq === -1 ? undefined : pair.slice(eq + 1);
      const safeName = holdsCredential(name) ? '[redacted]' : name;
      if (value === undefined) return safeName;
      return `${safeName}=${CREDENTIAL_PARAM.test(decoded(name)) || holdsCredential(value) ? '[redacted]' : value}`;
    });
  return `${path}?${params.join('&')}`;
};

export const createLogger = (level: string, destination?: DestinationStream): Logger =>
  pino(
    {
      level,
      base: { service: 'calls' },
      redact: {
        paths: [
          'req.headers["x-api-key"]',
          'req.headers.authorization',
          'headers["x-api-key"]',
          'headers.authorization',
        ],
        censor: '[redacted]',
      },
      serializers: {
        err: pino.stdSerializers.err,
        req: (req: { method?: string; url?: string; ip?: string; id?: string }) => ({
          method: req.method,
          url: redactUrl(req.url ?? ''),
          remoteAddress: req.ip,
        }),
        res: (res: { statusCode?: number }) => ({ statusCode: res.statusCode }),
      },
    },
    destination,
  );
