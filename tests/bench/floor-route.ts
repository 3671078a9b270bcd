/**
 * One rung of the ingest floor (see floor-wrk.bench.ts): a Fastify 5 route at the ingest path that
 * does only part of what an accepted call needs, with the project's own modules, so `wrk` can
 * measure what each part costs by itself. RUNG (cumulative):
 *
 * - `bare`: parses the JSON body and answers 201 (the ingest bench's baseline).
 * - `normalised`: + the submission rules (`normaliseSubmission`, what the ingest route validates with).
 * - `minimal`: `normalised` + the least a durable 201 needs, written here without the project's
 *   adapters: one INSERT of the body per request into a table of its own, the requests waiting
 *   together committed in one transaction, then one fdatasync of the WAL (kept open) per round in
 *   the thread pool. What the event log adds to it is the difference to `durable`.
 * - `durable`: `normalised` + the CallSubmitted record published to the embedded event log, answered once the
 *   WAL holding it is synced (the durable 201 of decision 0010).
 * - `sealed`: + its personal fields sealed under a new data key per call, itself stored (decision 0014).
 * - `kafka`: `normalised` + the record published to Kafka (KAFKA_BROKERS) through the Kafka event
 *   log, answered once the broker acknowledged it (acks=all), unsealed: the floor of target 4's
 *   ingress, whose other parts (PostgreSQL for teams, capacity and data keys) it leaves out.
 * - `kafka-sealed`: `kafka` + its personal fields sealed under a new data key per call, the key
 *   stored in PostgreSQL (DATABASE_URL) as target 4's ingress stores it.
 * - `kafka-reserved`: `kafka-sealed` + one event appended to a team's stream on the PostgreSQL
 *   event store before the publish (40 teams, no expected version): the least a capacity
 *   reservation writes. With it, every durable write target 4's ingress makes before its 201.
 *
 * What the service's ingress does beyond `sealed` (API key check, per-key rate limit, capacity
 * reservation on the team's stream, logging, metrics, tracing) is the difference to the service.
 * Run as `node --import tsx tests/bench/floor-route.ts` with PORT, RUNG and DATA_DIR.
 */
import Fastify from 'fastify';
import { fdatasync, open } from 'node:fs';
import { keyEncryptionKey } from '../../shared/adapters/crypto/aes-gcm.ts';
import { createPersonalData } from '../../shared/adapters/crypto/personal-data.ts';
import { createPostgresDataKeys } from '../../shared/adapters/data-keys/postgres-data-keys.ts';
import { createSqliteDataKeys } from '../../shared/adapters/data-keys/sqlite-data-keys.ts';
import { createPostgresEventStore } from '../../shared/adapters/event-store/postgres-event-store.ts';
import { createKafkaEventLog } from '../../shared/adapters/event-log/kafka-event-log.ts';
import { createSqliteEventLog } from '../../shared/adapters/event-log/sql-event-log.ts';
import type { PersonalData } from '../../shared/adapters/crypto/personal-data.ts';
import type { EventLog } from '../../shared/ports/event-log.ts';
import { openSqlite, type SqliteDb } from '../../shared/adapters/sqlite/sqlite-database.ts';
import { callEvents } from '../../shared/domain/call/call-catalogue.ts';
import type { CallSubmittedData } from '../../shared/domain/call/call-submitted.ts';
import { normaliseSubmission } from '../../shared/domain/submission/normalise-submission.ts';
import { estimateCallMinutes } from '../../shared/domain/team/capacity.ts';
import { callSubmittedRecord, INGEST_PATH, newCallId } from '../../services/ingress/ingest-route.ts';
import { freshSchema } from '../support/postgres.ts';

export const RUNGS = [
  'bare',
  'normalised',
  'minimal',
  'durable',
  'sealed',
  'kafka',
  'kafka-sealed',
  'kafka-reserved',
] as const;
/** The rungs that publish to Kafka (KAFKA_BROKERS), and those that also write to PostgreSQL (DATABASE_URL). */
export const KAFKA_RUNGS: readonly Rung[] = ['kafka', 'kafka-sealed', 'kafka-reserved'];
export const POSTGRES_RUNGS: readonly Rung[] = ['kafka-sealed', 'kafka-reserved'];
export type Rung = (typeof RUNGS)[number];

type Normalised = Extract<ReturnType<typeof normaliseSubmission>, { ok: true }>;
/** What a rung does with a valid submission before its 201. */
type Recorder = (callId: string, normalised: Normalised) => Promise<void>;

/**
 * The `minimal` rung's write: requests queued within one turn of the event loop are inserted in one
 * transaction, and each waits for the next fdatasync of the WAL that began after its commit.
 */
const minimalWriter = (db: SqliteDb): Recorder => {
  db.exec(
    'CREATE TABLE IF NOT EXISTS floor_minimal (id INTEGER PRIMARY KEY, call_id TEXT NOT NULL, body TEXT NOT NULL)',
  );
  const insert = db.prepare('INSERT INTO floor_minimal (call_id, body) VALUES (?, ?)');
  let queued: { callId: string; body: string; done: () => void }[] = [];
  let committed: (() => void)[] = [];
  let syncing = false;
  let fd: number | undefined;
  const sync = (): void => {
    if (syncing || committed.length === 0) return;
    syncing = true;
    const round = committed;
    committed = [];
    const synced = (error: NodeJS.ErrnoException | null) => {
      if (error) throw error;
      syncing = false;
      for (const done of round) done();
      sync();
    };
    if (fd === undefined)
      open(`${db.name}-wal`, 'r', (error, opened) => {
        if (error) throw error;
        fd = opened;
        fdatasync(fd, synced);
      });
    else fdatasync(fd, synced);
  };
  const flush = () => {
    const batch = queued;
    queued = [];
    db.exec('BEGIN IMMEDIATE');
    for (const { callId, body } of batch) insert.run(callId, body);
    db.exec('COMMIT');
    for (const { done } of batch) committed.push(done);
    sync();
  };
  return (callId, { submission }) =>
    new Promise((done) => {
      if (queued.length === 0) setImmediate(flush);
      queued.push({ callId, body: JSON.stringify(submission), done });
    });
};

/** The CallSubmitted record of a valid submission, published to `topic` (sealed first with `personalData`). */
const publisher =
  (eventLog: EventLog, topic: string, personalData?: PersonalData): Recorder =>
  async (callId, { submission, warnings }) => {
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
    await eventLog.publish(topic, [callSubmittedRecord(data, published)]);
  };

/** Serves the rung named by RUNG on PORT, its database in DATA_DIR, until SIGTERM. */
const serve = async (rung: Rung) => {
  if (!RUNGS.includes(rung)) throw new Error(`RUNG is one of ${RUNGS.join(', ')}, not ${String(rung)}`);
  const closing: (() => unknown)[] = [];
  let record: Recorder | undefined;
  if (KAFKA_RUNGS.includes(rung)) {
    const eventLog = await createKafkaEventLog({
      brokers: (process.env.KAFKA_BROKERS ?? '').split(',').filter(Boolean),
    });
    closing.push(() => eventLog.close());
    // A topic of its own per start, so each Kafka rung starts on an empty topic.
    const topic = `floor.calls.submitted.${Date.now()}.${process.pid}`;
    await eventLog.ensureTopics([{ name: topic, partitions: 6 }]);
    if (!POSTGRES_RUNGS.includes(rung)) record = publisher(eventLog, topic);
    else {
      // A schema of its own per start, dropped at the end.
      const connectionString = process.env.DATABASE_URL ?? '';
      const schema = freshSchema(connectionString);
      const postgres = { connectionString, schema: schema.schema };
      const personalData = createPersonalData(
        await createPostgresDataKeys(postgres, keyEncryptionKey('floor-route-data-key-secret-0123456789')),
      );
      closing.unshift(() => personalData.close());
      const publish = publisher(eventLog, topic, personalData);
      if (rung === 'kafka-sealed') record = publish;
      else {
        const store = await createPostgresEventStore(postgres);
        closing.unshift(() => store.close());
        let teams = 0;
        record = async (callId, normalised) => {
          const minutes = estimateCallMinutes(normalised.submission);
          await store.append(`team-floor${teams++ % 40}`, [{ type: 'CapacityReserved', data: { callId, minutes } }]);
          await publish(callId, normalised);
        };
      }
      closing.push(() => schema.drop());
    }
  } else if (rung === 'minimal' || rung === 'durable' || rung === 'sealed') {
    const sqlite = openSqlite(process.env.DATA_DIR ?? './floor-data');
    closing.push(() => sqlite.close());
    if (rung === 'minimal') record = minimalWriter(sqlite.db);
    else {
      const eventLog = createSqliteEventLog(sqlite.db);
      closing.unshift(() => eventLog.close());
      const topic = 'calls.submitted.v1';
      await eventLog.ensureTopics([{ name: topic, partitions: 6 }]);
      const personalData =
        rung === 'sealed'
          ? createPersonalData(
              createSqliteDataKeys(sqlite.db, keyEncryptionKey('floor-route-data-key-secret-0123456789')),
            )
          : undefined;
      if (personalData) closing.unshift(() => personalData.close());
      record = publisher(eventLog, topic, personalData);
    }
  }

  const app = Fastify({ logger: false, bodyLimit: 10 * 1024 * 1024 });
  app.post(INGEST_PATH, async (request, reply) => {
    if (rung === 'bare') {
      const body = request.body;
      return reply
        .code(201)
        .send({ callId: 'c-' + (typeof body === 'object' && body !== null ? Object.keys(body).length : 0) });
    }
    const normalised = normaliseSubmission(request.body);
    if (!normalised.ok) return reply.code(400).send({ errors: normalised.errors });
    const callId = newCallId();
    await record?.(callId, normalised);
    return reply.code(201).send({ callId, status: 'pending' });
  });
  await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });

  process.once('SIGTERM', () => {
    void (async () => {
      await app.close();
      for (const close of closing) await close();
      process.exit(0);
    })();
  });
};

if (import.meta.main) await serve(process.env.RUNG as Rung);
