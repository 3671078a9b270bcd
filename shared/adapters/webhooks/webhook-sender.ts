/**
 * Sends one webhook attempt over HTTP(S) under the audio downloads' address policy: every address
 * the host resolves to is checked when the socket connects (guarded-lookup.ts), an IP literal
 * before the request; no agent is shared, no redirect is followed (a 3xx is an answer like any
 * other non-2xx), the whole attempt has a deadline, and at most `maxResponseBytes` of the answer's
 * body are read.
 */
import { http } from '../../node-http.ts';
import https from 'node:https';
import { isIP } from 'node:net';
import { classifyAddress } from '../audio/address-policy.ts';
import { guardedLookup, type ResolveHost, systemResolveHost } from '../audio/guarded-lookup.ts';

export interface WebhookSenderOptions {
  /**
   * Deadline of one attempt (connect, answer, body), ms; 10 s in the service. An answer's status
   * within it is the outcome, however its body ends.
   */
  timeoutMs: number;
  /** Most of an answer's body read, bytes; 64 KB in the service. */
  maxResponseBytes: number;
  /** Lift the address policy (WEBHOOK_ALLOW_PRIVATE, local development and tests). */
  allowPrivate: boolean;
  /** Test seam: host name resolution. */
  resolveHost?: ResolveHost;
}

export interface WebhookAnswer {
  statusCode: number;
  /** The start of the answer's body (at most maxResponseBytes), as text. */
  body: string;
  /** How long the receiver asks to be left alone (its Retry-After, seconds or a date), ms; absent when it says nothing usable. */
  retryAfterMs?: number;
}

/** A Retry-After header as milliseconds from `now`: delta-seconds or an HTTP date in the future; else undefined. */
export const retryAfterMs = (header: string | undefined, now = Date.now()): number | undefined => {
  const value = header?.trim();
  if (!value) return undefined;
  if (/^[0-9]{1,10}$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isFinite(at) && at > now ? at - now : undefined;
};

/** An attempt that got no answer; `message` is safe to show the team (no address classes). */
export class WebhookSendError extends Error {
  override readonly name = 'WebhookSendError';
}

/** Sends one attempt; `abort` ends it early (the process is stopping). */
export type SendWebhook = (
  url: string,
  headers: Record<string, string>,
  body: string,
  abort?: AbortSignal,
) => Promise<WebhookAnswer>;

export const createWebhookSender = (options: WebhookSenderOptions): SendWebhook => {
  const refuse = (address: string, host: string) => {
    if (options.allowPrivate) return undefined;
    return classifyAddress(address).allowed
      ? undefined
      : new WebhookSendError(`the host "${host}" could not be reached, or is not a public internet address`);
  };
  const lookup = guardedLookup(options.resolveHost ?? systemResolveHost, refuse);

  return async (raw, headers, body, abort) => {
    const url = new URL(raw);
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new WebhookSendError('the URL is not http or https');
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    if (isIP(host)) {
      const refusal = refuse(host, host);
      if (refusal) throw refusal;
    }
    const deadline = AbortSignal.timeout(options.timeoutMs);
    const signal = abort ? AbortSignal.any([deadline, abort]) : deadline;
    return new Promise<WebhookAnswer>((resolve, reject) => {
      /** Set once the status line came: the receiver answered, whatever becomes of its body. */
      let answered: (() => void) | undefined;
      const fail = (error: Error & { code?: string }) => {
        if (answered) return answered();
        if (error instanceof WebhookSendError) return reject(error);
        if (deadline.aborted) return reject(new WebhookSendError(`no answer within ${options.timeoutMs / 1000} s`));
        if (signal.aborted) return reject(new WebhookSendError('the attempt was abandoned: the process is stopping'));
        reject(new WebhookSendError(`the request failed (${error.code ?? error.message})`));
      };
      const client = url.protocol === 'https:' ? https : http;
      const request = client.request(
        url,
        {
          method: 'POST',
          agent: false,
          lookup,
          signal,
          headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        },
        (response) => {
          const chunks: Buffer[] = [];
          let bytes = 0;
          // The outcome is the status: a body that breaks off or outlasts the deadline (a 200 whose
          // body never ends) is read as far as it came; the attempt was not "no answer".
          const done = () => {
            response.destroy();
            const after = retryAfterMs(response.headers['retry-after']);
            resolve({
              statusCode: response.statusCode ?? 0,
              body: Buffer.concat(chunks).toString('utf8'),
              ...(after === undefined ? {} : { retryAfterMs: after }),
            });
          };
          answered = done;
          response.on('data', (chunk: Buffer) => {
            const room = options.maxResponseBytes - bytes;
            chunks.push(chunk.subarray(0, Math.max(0, room)));
            bytes += chunk.length;
            if (bytes >= options.maxResponseBytes) done();
          });
          response.on('end', done);
          response.on('error', done);
          response.on('close', done);
        },
      );
      request.on('error', fail);
      request.end(body);
    });
  };
};
