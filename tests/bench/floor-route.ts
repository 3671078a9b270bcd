/**
 * One rung of the ingest floor (see floor-wrk.bench.ts): a Fastify 5 route at the ingest path that
 * does only part of what an accepted call needs, with the project's own modules, so `wrk` can
 * measure what each part costs by itself. RUNG (cumulative):
 *
 * - `bare`: parses the JSON body and answers 201 (the ingest bench's baseline).
 * - `normalised`: + the submission rules (`normaliseSubmission`, what the ingest route validates with).
 * - `durable`: + the CallSubmitted record published to the embedded event log, answered once the
 *   WAL holding it is synced (the durable 201 of decision 0010).
 * - `sealed`: + its personal fields sealed under a new data key per call, itself stored (decision 0014).
 * - `kafka`: `normalised` + the record published to Kafka (KAFKA_BROKERS) through the Kafka event
 *   log, answered once the broker acknowledged it (acks=all), unsealed: the floor of target 4's
 *   ingress, whose other parts (PostgreSQL for teams, capacity and data keys) it leaves out.
 *
 * What the service's ingress does beyond `sealed` (API key check, per-key rate limit, capacity
 * reservation on the team's stream, logging, metrics, tracing) is the difference to the service.
 * Run as `node --import tsx tests/bench/floor-route.ts` with PORT, RUNG and DATA_DIR.
 */
import Fastify from 'fastify';

import { keyEncryptionKey } from '../../shared/adapters/crypto/aes-gcm.ts';
import { createPersonalData } from '../../shared/adapters/crypto/personal-data.ts';
import { createSqliteDataKeys } from '../../shared/adapters/data-keys/sqlite-data-keys.ts';
import { createKafkaEventLog } from '../../shared/adapters/event-log/kafka-event-log.ts';
import { createSqliteEventLog } from '../../shared/adapters/event-log/sql-event-log.ts';
import { openSqlite } from '../../shared/adapters/sqlite/sqlite-database.ts';
import { toRecord } from '../../shared/cloudevents.ts';
import { callEvents } from '../../shared/domain/call/call-catalogue.ts';
import { CALL_SUBMITTED_TYPE, type CallSubmittedData } from '../../shared/domain/call/call-submitted.ts';
import { normaliseSubmission } from '../../shared/domain/submission/normalise-submission.ts';
import { estimateCallMinutes } from '../../shared/domain/team/capacity.ts';
import { INGEST_PATH, newCallId } from '../../services/ingress/ingest-route.ts';

export const RUNGS = ['bare', 'normalised', 'durable', 'sealed', 'kafka'] as const;
export type Rung = (typeof RUNGS)[number];

/** Serves the rung named by RUNG on PORT, its database in DATA_DIR, until SIGTERM. */
const serve = async (rung: Rung) => {
  const level = RUNGS.indexOf(rung);
  if (level < 0) throw new Error(`RUNG is one of ${RUNGS.join(', ')}, not ${String(rung)}`);

  const kafka = rung === 'kafka';
  // A topic of its own per start, so each Kafka rung starts on an empty topic.
  const TOPIC = kafka ? `floor.calls.submitted.${Date.now()}` : 'calls.submitted.v1';
  const sqlite = level >= 2 && !kafka ? openSqlite(process.env.DATA_DIR ?? './floor-data') : undefined;
  const eventLog = kafka
    ? await createKafkaEventLog({ brokers: (process.env.KAFKA_BROKERS ?? '').split(',').filter(Boolean) })
    : sqlite
      ? createSqliteEventLog(sqlite.db)
      : undefined;
  await eventLog?.ensureTopics([{ name: TOPIC, partitions: 6 }]);
  const personalData =
    sqlite && level >= 3
      ? createPersonalData(createSqliteDataKeys(sqlite.db, keyEncryptionKey('floor-route-data-key-secret-0123456789')))
      : undefined;

  const app = Fastify({ logger: false, bodyLimit: 10 * 1024 * 1024 });
  app.post(INGEST_PATH, async (request, reply) => {
    if (level === 0) {
      const body = request.body;
      return reply
        .code(201)
        .send({ callId: 'c-' + (typeof body === 'object' && body !== null ? Object.keys(body).length : 0) });
    }
    const normalised = normaliseSubmission(request.body);
    if (!normalised.ok) return reply.code(400).send({ errors: normalised.errors });
    const callId = newCallId();
    if (eventLog) {
      const { submission, warnings } = normalised;
      const submittedAt = new Date().toISOString();
      const data: CallSubmittedData = {
        callId,
        teamId: 'floor-team',
        keyId: 'floor-key',
        submittedAt,
        submission,
        attributedTo: { kind: 'owner', email: 'owner@floor.test', name: 'Floor Owner' },
        capacity: { reservedMinutes: estimateCallMinutes(submission), autoRechargedMinutes: 0 },
        warnings,
      };
      const encoded = callEvents.encode({ type: 'CallSubmitted', data }).data;
      const published = personalData ? await personalData.seal(callId, 'CallSubmitted', encoded) : encoded;
      await eventLog.publish(TOPIC, [
        toRecord({
          id: callId,
          type: CALL_SUBMITTED_TYPE,
          source: INGEST_PATH,
          subject: callId,
          time: submittedAt,
          data: published,
          extensions: { teamid: 'floor-team' },
        }),
      ]);
    }
    return reply.code(201).send({ callId, status: 'pending' });
  });
  await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });

  const stop = async () => {
    await app.close();
    await personalData?.close();
    await eventLog?.close();
    sqlite?.close();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop());
};

if (import.meta.main) await serve(process.env.RUNG as Rung);
