/**
 * A webhook receiver in the test process: a node:http server on 127.0.0.1 that records every
 * request (headers and body) and answers as `respond` says (a status, or 'hang' to never answer).
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { eventually } from './eventually.ts';

export interface ReceivedWebhook {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** Parsed body. */
  json: { type: string; timestamp: string; data: Record<string, unknown> };
  /** When the body had arrived (ms since the epoch). */
  receivedAt: number;
}

/** A status, a status with headers, or 'hang' to never answer. */
export type Respond = (
  request: ReceivedWebhook,
  index: number,
) => number | { status: number; headers: Record<string, string> } | 'hang';

export interface WebhookReceiver {
  /** URL of a path on the receiver (default '/hook'). */
  url(path?: string): string;
  received: ReceivedWebhook[];
  /** Changes how later requests are answered. */
  respondWith(respond: Respond): void;
  /** Waits until `count` requests (optionally only those `matching`) arrived; returns them. */
  waitFor(count: number, matching?: (r: ReceivedWebhook) => boolean, timeoutMs?: number): Promise<ReceivedWebhook[]>;
  close(): Promise<void>;
}

export const startWebhookReceiver = async (respond: Respond = () => 200): Promise<WebhookReceiver> => {
  let answer = respond;
  const received: ReceivedWebhook[] = [];
  const hanging = new Set<ServerResponse>();
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: ReceivedWebhook['json'];
      try {
        json = JSON.parse(body) as ReceivedWebhook['json'];
      } catch {
        json = { type: '', timestamp: '', data: {} };
      }
      const entry = { path: request.url ?? '', headers: request.headers, body, json, receivedAt: Date.now() };
      received.push(entry);
      const answered = answer(entry, received.length - 1);
      if (answered === 'hang') {
        hanging.add(response);
        return;
      }
      const { status, headers } = typeof answered === 'number' ? { status: answered, headers: {} } : answered;
      response
        .writeHead(status, { 'content-type': 'text/plain', ...headers })
        .end(status >= 300 && status < 400 ? '' : 'ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path = '/hook') => `http://127.0.0.1:${port}${path}`,
    received,
    respondWith(next) {
      answer = next;
    },
    waitFor(count, matching = () => true, timeoutMs = 15_000) {
      return eventually(
        () => {
          const found = received.filter(matching);
          if (found.length < count)
            throw new Error(
              `${found.length} of ${count} webhook requests so far: ${received.map((r) => r.json.type).join(', ')}`,
            );
          return found;
        },
        { timeoutMs, intervalMs: 20 },
      );
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const response of hanging) response.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
};
