/**
 * Structured logger (pino) for every service. API keys and tokens never reach a log line: auth
 * headers are redacted, and query-string values whose name looks like a credential (or whose value
 * looks like a Push API key) are replaced before a URL is logged.
 */
import { type DestinationStream, type Logger, pino } from 'pino';

const CREDENTIAL_PARAM = /(key|token|secret|auth|password)/i;
const API_KEY_LIKE = /pk_[A-Za-z0-9]+/g;

/** The URL with credential-looking query values replaced by `[redacted]`. */
export const redactUrl = (url: string): string => {
  const q = url.indexOf('?');
  if (q === -1) return url.replace(API_KEY_LIKE, 'pk_[redacted]');
  const params = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const [name = '', value] = pair.split('=');
      let decoded = name;
      try {
        decoded = decodeURIComponent(name);
      } catch {
        // keep the raw name
      }
      return value !== undefined && CREDENTIAL_PARAM.test(decoded) ? `${name}=[redacted]` : pair;
    });
  return `${url.slice(0, q)}?${params.join('&')}`.replace(API_KEY_LIKE, 'pk_[redacted]');
};

export const createLogger = (level: string, destination?: DestinationStream): Logger =>
  pino(
    {
      level,
      base: { service: 'calls' },
      redact: {
        paths: ['req.headers["x-api-key"]', 'req.headers.authorization', 'headers["x-api-key"]', 'headers.authorization'],
        censor: '[redacted]',
      },
      serializers: {
        err: pino.stdSerializers.err,
        req: (req: { method?: string; url?: string; ip?: string; id?: string }) => ({ method: req.method, url: redactUrl(req.url ?? ''), remoteAddress: req.ip }),
        res: (res: { statusCode?: number }) => ({ statusCode: res.statusCode }),
      },
    },
    destination,
  );
