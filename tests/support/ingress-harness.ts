/**
 * The ingress built on real backends, driven with `app.inject()`: no port is opened. Log lines are
 * captured so tests can check what reaches them.
 */
import type { Health } from '../../services/runtime/health.ts';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import type { LightMyRequestResponse } from 'fastify';
import { createMemoryRateLimiter } from '../../shared/adapters/rate-limit/memory-rate-limiter.ts';
import type { EventLog, LogRecord } from '../../shared/ports/event-log.ts';
import type { EventStore } from '../../shared/ports/event-store.ts';
import type { RateLimiter } from '../../shared/ports/rate-limiter.ts';
import type { ReadModels } from '../../shared/ports/read-models.ts';
import { TOPICS, type Topics } from '../../shared/topics.ts';
import type { PersonalData } from '../../shared/adapters/crypto/personal-data.ts';
import { createIngress, type Ingress } from '../../services/ingress/ingress.ts';
import { INGEST_PATH } from '../../services/ingress/ingest-route.ts';
import { createLogger } from '../../services/runtime/logger.ts';
import { eventually } from './eventually.ts';

export const ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';
export const API_KEY_SECRET = 'test-api-key-secret-0123456789abcdef0123';

export interface Harness {
  ingress: Ingress;
  eventLog: EventLog;
  eventStore: EventStore;
  /** Every log line written so far (JSON text). */
  logLines: string[];
  admin(method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown): Promise<LightMyRequestResponse>;
  /** A new team with `capacityHours` (default 100) and one API key. */
  team(options?: {
    capacityHours?: number;
    ownerEmail?: string;
    ownerName?: string;
  }): Promise<{ teamId: string; key: string; keyId: string }>;
  ingest(options: {
    key?: string;
    body?: unknown;
    headers?: Record<string, string>;
    url?: string;
    payload?: string;
    remoteAddress?: string;
  }): Promise<LightMyRequestResponse>;
  /** The CallSubmitted record of a call on calls.submitted.v1 (waits for it). */
  submitted(callId: string): Promise<LogRecord>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  /** Refuse webhook URLs on loopback and private addresses (tests' receivers listen on loopback, so off by default). */
  webhookAddressPolicy?: boolean;
  eventStore: EventStore;
  eventLog: EventLog;
  limiter?: RateLimiter;
  /** Topic names; default without prefix. */
  topics?: Topics;
  /** Serve the read API from these. */
  readModels?: ReadModels;
  /** Readiness registry GET /readyz reports. */
  health?: Health;
  /** Seals personal fields and serves erasure (DELETE /api/calls/:callId, retention, erasure requests). */
  personalData?: PersonalData;
  /** The ingress's clock. */
  now?: () => Date;
  /** The event log and the event store share one embedded database (as `npm start` runs). */
  publishCoversStore?: boolean;
  /** The events as stored (personal fields sealed), as `npm start` gives the ingress. */
  storedEvents?: EventStore;
}

export const createHarness = async ({
  eventStore,
  eventLog,
  limiter = createMemoryRateLimiter(),
  topics = TOPICS,
  readModels,
  health,
  webhookAddressPolicy = false,
  personalData,
  now,
  publishCoversStore,
  storedEvents,
}: HarnessOptions): Promise<Harness> => {
  const logLines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logLines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  const ingress = await createIngress({
    eventStore,
    eventLog,
    limiter,
    topics,
    readModels,
    logger: createLogger('debug', sink),
    adminToken: ADMIN_TOKEN,
    apiKeySecret: API_KEY_SECRET,
    health,
    webhookAllowPrivate: !webhookAddressPolicy,
    personalData,
    now,
    publishCoversStore,
    storedEvents,
  });
  const app = ingress.app;

  const admin: Harness['admin'] = (method, url, body) =>
    app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      ...(body === undefined ? {} : { payload: body as object }),
    });

  return {
    ingress,
    eventLog,
    eventStore,
    logLines,
    admin,
    async team({ capacityHours = 100, ownerEmail = 'owner@acme.test', ownerName = 'Olive Owner' } = {}) {
      const created = await admin('POST', '/api/admin/teams', {
        name: `Team ${randomUUID()}`,
        ownerEmail,
        ownerName,
        capacityHours,
      });
      if (created.statusCode !== 201) throw new Error(`team create failed: ${created.statusCode} ${created.body}`);
      const { teamId } = created.json<{ teamId: string }>();
      const issued = await admin('POST', `/api/admin/teams/${teamId}/keys`, { label: 'test' });
      if (issued.statusCode !== 201) throw new Error(`key issue failed: ${issued.statusCode} ${issued.body}`);
      return { teamId, ...issued.json<{ key: string; keyId: string }>() };
    },
    ingest({ key, body, headers = {}, url = INGEST_PATH, payload, remoteAddress = '127.0.0.1' }) {
      return app.inject({
        method: 'POST',
        url,
        remoteAddress,
        headers: { 'content-type': 'application/json', ...(key ? { 'x-api-key': key } : {}), ...headers },
        payload: payload ?? JSON.stringify(body ?? {}),
      });
    },
    async submitted(callId) {
      return eventually(
        async () => {
          const records = await eventLog.read(topics.callsSubmitted, { limit: 100_000 });
          const record = records.find((r) => r.key === callId);
          if (!record) throw new Error(`no CallSubmitted record for ${callId}`);
          return record;
        },
        { timeoutMs: 15_000, intervalMs: 50 },
      );
    },
    async close() {
      await ingress.close();
      await limiter.close();
    },
  };
};
