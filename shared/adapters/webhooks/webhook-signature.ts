/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com): `v1,` + base64 HMAC-SHA256 of
 * `{webhook-id}.{webhook-timestamp}.{body}`, keyed with the secret's bytes (the base64 after
 * `whsec_`); one signature per secret, space-separated, during a rotation.
 */
import { createHmac, randomBytes } from 'node:crypto';

const SECRET_PREFIX = 'whsec_';

/** A new secret: `whsec_` + base64 of 32 random bytes. */
export const newWebhookSecret = (): string => SECRET_PREFIX + randomBytes(32).toString('base64');

/** The `webhook-signature` header value for one attempt. */
export const signWebhook = (
  secrets: readonly string[],
  messageId: string,
  timestampSeconds: number,
  body: string,
): string =>
  secrets
    .map((secret) => {
      const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
      return `v1,${createHmac('sha256', key).update(`${messageId}.${timestampSeconds}.${body}`).digest('base64')}`;
    })
    .join(' ');
