/**
 * Produce and consume throughput of each event-log adapter (a bench, not a test): prints numbers,
 * asserts nothing. Records are ~300-byte JSON values with CloudEvents headers, spread over many keys.
 *
 * Per adapter, records per second for:
 * - publish: `--records` single-record publishes from `--concurrency` concurrent publishers
 *   (each resolves once durable; the adapter group-commits them);
 * - end-to-end: the same, with one consumer-group member consuming at once, until it has seen all;
 * - consume: one group member reading the published records, from its assignment until all seen.
 *
 * Baselines measured in the same run:
 * - SQL log: the bare driver, one autocommit INSERT per record into a table shaped like the log's
 *   (the cost of durability without group commit; also the ceiling of a bare end-to-end path), and
 *   a bare SELECT of the adapter's rows in pages (the ceiling of consumption).
 * - Kafka: a bare kafkajs producer with the adapter's settings (acks -1, idempotent, one request in
 *   flight), one record per send from as many concurrent senders; bare produce + `eachMessage`
 *   consumer at once; and a bare `eachMessage` consumer reading the adapter's records.
 * Baselines that write one record per request are capped at `--baseline-records`.
 *
 *   npx tsx tests/bench/event-log.bench.ts [--records 50000] [--baseline-records 3000] [--concurrency 64] [--consume-concurrency 64] [--keys 10000] [--partitions 6] [--only sqlite,postgres,kafka]
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres KAFKA_BROKERS=127.0.0.1:9092 npx tsx tests/bench/event-log.bench.ts
 */
import Database from 'better-sqlite3';
import kafkajs from 'kafkajs';
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createKafkaEventLog } from '../../shared/adapters/event-log/kafka-event-log.ts';
import { createPostgresEventLog, createSqliteEventLog } from '../../shared/adapters/event-log/sql-event-log.ts';
import { openSqlite } from '../../shared/adapters/sqlite/sqlite-database.ts';
import type { EventLog, OutgoingRecord } from '../../shared/ports/event-log.ts';
import { freshSchema } from '../support/postgres.ts';
import { tempDir } from '../support/temp-dir.ts';
import { drive, report, type Row } from './report.ts';

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '50000' },
    'baseline-records': { type: 'string', default: '3000' },
    concurrency: { type: 'string', default: '64' },
    'consume-concurrency': { type: 'string', default: '64' },
    keys: { type: 'string', default: '10000' },
    partitions: { type: 'string', default: '6' },
    only: { type: 'string', default: 'sqlite,postgres,kafka' },
  },
});
const RECORDS = Number(values.records);
const BASELINE_RECORDS = Math.min(RECORDS, Number(values['baseline-records']));
const CONCURRENCY = Number(values.concurrency);
/** `concurrency` of the adapter's consumers (records in flight); 64 is the port's default. */
const CONSUME_CONCURRENCY = Number(values['consume-concurrency']);
const PARTITIONS = Number(values.partitions);
const ONLY = new Set(values.only.split(','));
/** Longest a consume or end-to-end phase may take before the bench gives up. */
const PHASE_TIMEOUT_MS = 180_000;

// ---- records ----------------------------------------------------------------------------------

const KEYS = Array.from({ length: Number(values.keys) }, () => randomUUID());
const TEAMS = Array.from({ length: 20 }, () => randomUUID());

/** Record `i`: a CallSubmitted-like JSON value of ~300 bytes under one of many keys. */
const recordOf = (i: number): OutgoingRecord => {
  const key = KEYS[i % KEYS.length]!;
  const value = JSON.stringify({
    callId: key,
    teamId: TEAMS[i % TEAMS.length],
    submittedAt: new Date(Date.UTC(2026, 10, 20) + i * 1000).toISOString(),
    repName: 'Dana Reyes',
    tags: ['inbound', 'demo'],
    seq: i,
    transcript: 'Rep: thanks for joining today. Prospect: we are evaluating call tools this quarter.',
  });
  return {
    key,
    value,
    headers: { ce_specversion: '1.0', ce_id: `${key}-${i}`, ce_type: 'call.submitted', ce_source: '/bench' },
  };
};
const SAMPLE = recordOf(0);

// ---- driving ----------------------------------------------------------------------------------

/** Counts distinct records seen and resolves with the time the `expected`-th one arrived. */
const tally = (expected: number) => {
  const seen = new Set<string>();
  let finish: (at: number) => void = () => {};
  const all = new Promise<number>((resolve) => (finish = resolve));
  return {
    all,
    get seen() {
      return seen.size;
    },
    saw(partition: number, offset: bigint | string) {
      seen.add(`${partition}:${offset}`);
      if (seen.size === expected) finish(performance.now());
    },
  };
};

/** `promise`, or an error naming `what` after `PHASE_TIMEOUT_MS` or when `failed` rejects first. */
const within = async <T>(
  what: string,
  promise: Promise<T>,
  progress: () => string,
  failed?: Promise<unknown>,
): Promise<T> => {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what}: not finished after ${PHASE_TIMEOUT_MS} ms (${progress()})`)),
      PHASE_TIMEOUT_MS,
    );
  });
  const stopped = failed?.then(() => {
    throw new Error(`${what}: the consumer stopped early (${progress()})`);
  });
  try {
    return await Promise.race([promise, timeout, ...(stopped ? [stopped] : [])]);
  } finally {
    clearTimeout(timer);
  }
};

// ---- the adapter, any backend -----------------------------------------------------------------

/** One group member consuming `topic` until `expected` records are seen; the clock starts at its assignment. */
const consumeRate = async (log: EventLog, topic: string, expected: number): Promise<number> => {
  const count = tally(expected);
  let assignedAt: number | undefined;
  const consumer = await log.consume({
    groupId: `bench-${randomUUID()}`,
    topics: [topic],
    concurrency: CONSUME_CONCURRENCY,
    onAssigned: () => {
      assignedAt ??= performance.now();
    },
    handler: async (record) => count.saw(record.partition, record.offset),
  });
  try {
    const end = await within(`consume ${topic}`, count.all, () => `${count.seen} of ${expected} seen`, consumer.done);
    return expected / ((end - assignedAt!) / 1000);
  } finally {
    await consumer.stop();
  }
};

/** A consumer joins first; then the clock starts, `records` are published, and it stops once the consumer has them all. */
const endToEndRate = async (log: EventLog, topic: string, records: number): Promise<number> => {
  const count = tally(records);
  let assigned: () => void = () => {};
  const ready = new Promise<void>((resolve) => (assigned = resolve));
  const consumer = await log.consume({
    groupId: `bench-${randomUUID()}`,
    topics: [topic],
    concurrency: CONSUME_CONCURRENCY,
    onAssigned: (partitions) => {
      if (partitions.length > 0) assigned();
    },
    handler: async (record) => count.saw(record.partition, record.offset),
  });
  try {
    await within(`join ${topic}`, ready, () => 'no assignment', consumer.done);
    const started = performance.now();
    await drive(records, CONCURRENCY, (i) => log.publish(topic, [recordOf(i)]));
    const end = await within(`end-to-end ${topic}`, count.all, () => `${count.seen} of ${records} seen`, consumer.done);
    return records / ((end - started) / 1000);
  } finally {
    await consumer.stop();
  }
};

/** Publish, end-to-end and consume rows of one adapter (the topic of `publish` is then consumed). */
const adapterRates = async (log: EventLog) => {
  const topic = `bench-${randomUUID()}`;
  const e2eTopic = `bench-${randomUUID()}`;
  await log.ensureTopics([topic, e2eTopic].map((name) => ({ name, partitions: PARTITIONS })));
  const publish = await drive(RECORDS, CONCURRENCY, (i) => log.publish(topic, [recordOf(i)]));
  const consume = await consumeRate(log, topic, RECORDS);
  const endToEnd = await endToEndRate(log, e2eTopic, RECORDS);
  return { topics: [topic, e2eTopic], topic, publish, consume, endToEnd };
};

const describe = `${RECORDS.toLocaleString('en-US')} records of ~${SAMPLE.value.length} B, ${KEYS.length.toLocaleString('en-US')} keys, ${PARTITIONS} partitions`;

// ---- SQLite -----------------------------------------------------------------------------------

const LOG_TABLE =
  'topic TEXT NOT NULL, partition INTEGER NOT NULL, record_offset BIGINT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, headers TEXT NOT NULL, timestamp_ms BIGINT NOT NULL, PRIMARY KEY (topic, partition, record_offset)';

const sqliteRows = async (): Promise<Row[]> => {
  const base = tempDir('event-log-bench-');
  const raw = new Database(`${base.path}/baseline.sqlite`);
  raw.pragma('journal_mode = WAL');
  raw.pragma('synchronous = FULL');
  raw.exec(`CREATE TABLE log_records (${LOG_TABLE})`);
  const insert = raw.prepare(
    'INSERT INTO log_records (topic, partition, record_offset, key, value, headers, timestamp_ms) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  const insertRate = await drive(BASELINE_RECORDS, 1, async (i) => {
    const record = recordOf(i);
    insert.run(
      'bench',
      i % PARTITIONS,
      Math.floor(i / PARTITIONS),
      record.key,
      record.value,
      JSON.stringify(record.headers),
      Date.now(),
    );
  });
  raw.close();
  base.remove();

  const dir = tempDir('event-log-bench-');
  const opened = openSqlite(dir.path);
  const log = createSqliteEventLog(opened.db);
  const rates = await adapterRates(log);
  await log.close();

  // The ceiling of consumption: the adapter's rows read back by the bare driver, pages of 500 per partition.
  const select = opened.db.prepare(
    'SELECT partition, record_offset, key, value, headers, timestamp_ms FROM log_records WHERE topic = ? AND partition = ? AND record_offset >= ? ORDER BY record_offset LIMIT 500',
  );
  let read = 0;
  const started = performance.now();
  for (let partition = 0; partition < PARTITIONS; partition++) {
    for (let from = 0; ;) {
      const rows = select.all(rates.topic, partition, from) as Array<{ headers: string }>;
      if (rows.length === 0) break;
      for (const row of rows) JSON.parse(row.headers);
      read += rows.length;
      from += rows.length;
    }
  }
  const selectRate = read / ((performance.now() - started) / 1000);
  opened.close();
  dir.remove();
  return [
    {
      name: 'sqlite baseline: bare better-sqlite3, one autocommit INSERT per record',
      perSecond: insertRate,
      baseline: true,
    },
    { name: `sqlite event log: publish, ${CONCURRENCY} concurrent publishers`, perSecond: rates.publish },
    { name: 'sqlite event log: end-to-end (publish and consume at once)', perSecond: rates.endToEnd },
    { name: 'sqlite baseline: bare SELECT of the same rows, pages of 500', perSecond: selectRate, baseline: true },
    {
      name: `sqlite event log: consume, one group member (concurrency ${CONSUME_CONCURRENCY})`,
      perSecond: rates.consume,
    },
  ];
};

// ---- PostgreSQL -------------------------------------------------------------------------------

const postgresRows = async (url: string): Promise<Row[]> => {
  const fresh = freshSchema(url);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`CREATE SCHEMA ${fresh.schema}`);
    await client.query(`CREATE TABLE ${fresh.schema}.baseline (${LOG_TABLE})`);
    const insertRate = await drive(BASELINE_RECORDS, 1, (i) => {
      const record = recordOf(i);
      return client.query(
        `INSERT INTO ${fresh.schema}.baseline (topic, partition, record_offset, key, value, headers, timestamp_ms) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [
          'bench',
          i % PARTITIONS,
          Math.floor(i / PARTITIONS),
          record.key,
          record.value,
          JSON.stringify(record.headers),
          Date.now(),
        ],
      );
    });

    const log = await createPostgresEventLog({ connectionString: url, schema: fresh.schema });
    const rates = await adapterRates(log);
    await log.close();

    let read = 0;
    const started = performance.now();
    for (let partition = 0; partition < PARTITIONS; partition++) {
      for (let from = 0; ;) {
        const { rows } = await client.query<{ headers: string }>(
          `SELECT partition, record_offset, key, value, headers, timestamp_ms FROM ${fresh.schema}.log_records WHERE topic = $1 AND partition = $2 AND record_offset >= $3 ORDER BY record_offset LIMIT 500`,
          [rates.topic, partition, from],
        );
        if (rows.length === 0) break;
        for (const row of rows) JSON.parse(row.headers);
        read += rows.length;
        from += rows.length;
      }
    }
    const selectRate = read / ((performance.now() - started) / 1000);
    return [
      {
        name: 'postgres baseline: bare pg client, one autocommit INSERT per record',
        perSecond: insertRate,
        baseline: true,
      },
      { name: `postgres event log: publish, ${CONCURRENCY} concurrent publishers`, perSecond: rates.publish },
      { name: 'postgres event log: end-to-end (publish and consume at once)', perSecond: rates.endToEnd },
      { name: 'postgres baseline: bare SELECT of the same rows, pages of 500', perSecond: selectRate, baseline: true },
      {
        name: `postgres event log: consume, one group member (concurrency ${CONSUME_CONCURRENCY})`,
        perSecond: rates.consume,
      },
    ];
  } finally {
    await client.end();
    await fresh.drop();
  }
};

// ---- Kafka ------------------------------------------------------------------------------------

/** The adapter's connection and producer settings, for the bare kafkajs baseline. */
const RETRY: kafkajs.RetryOptions = {
  initialRetryTime: 100,
  maxRetryTime: 1000,
  retries: 4,
  factor: 0.2,
  multiplier: 2,
};

const bareProducer = async (kafka: kafkajs.Kafka) => {
  const producer = kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
    createPartitioner: kafkajs.Partitioners.DefaultPartitioner,
    retry: RETRY,
  });
  await producer.connect();
  return producer;
};

const sendOne = (producer: kafkajs.Producer, topic: string, i: number) => {
  const record = recordOf(i);
  return producer.send({
    topic,
    acks: -1,
    messages: [{ key: record.key, value: record.value, headers: record.headers! }],
  });
};

/**
 * A bare kafkajs consumer (`eachMessage`, auto-commit) with the adapter's group timing; `whenJoined`
 * runs once it has joined, before anything is fetched. Resolves with the time the `expected`-th record arrived.
 */
const bareConsume = async (
  kafka: kafkajs.Kafka,
  topic: string,
  expected: number,
  whenJoined: () => Promise<void> | void,
) => {
  const consumer = kafka.consumer({
    groupId: `bench-${randomUUID()}`,
    sessionTimeout: 10_000,
    heartbeatInterval: 500,
    rebalanceTimeout: 30_000,
    maxWaitTimeInMs: 500,
    retry: RETRY,
  });
  const count = tally(expected);
  let joinedAt: number | undefined;
  let joined: () => void = () => {};
  const join = new Promise<void>((resolve) => (joined = resolve));
  consumer.on(consumer.events.GROUP_JOIN, () => {
    joinedAt ??= performance.now();
    joined();
  });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  await consumer.run({
    partitionsConsumedConcurrently: 8,
    eachMessage: async ({ partition, message }) => count.saw(partition, message.offset),
  });
  try {
    await within(`bare join ${topic}`, join, () => 'not joined');
    await whenJoined();
    const end = await within(`bare consume ${topic}`, count.all, () => `${count.seen} of ${expected} seen`);
    return { joinedAt: joinedAt!, end };
  } finally {
    await consumer.disconnect();
  }
};

const kafkaRows = async (brokers: string[]): Promise<Row[]> => {
  const kafka = new kafkajs.Kafka({
    clientId: 'bench-bare',
    brokers,
    logLevel: kafkajs.logLevel.ERROR,
    connectionTimeout: 1000,
    requestTimeout: 10_000,
    retry: RETRY,
  });
  const admin = kafka.admin({ retry: RETRY });
  await admin.connect();
  const created: string[] = [];
  const createTopic = async () => {
    const topic = `bench-${randomUUID()}`;
    await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: PARTITIONS }] });
    created.push(topic);
    return topic;
  };
  try {
    // Bare produce: one record per send, as many concurrent senders as the adapter gets publishers.
    const producer = await bareProducer(kafka);
    const produceTopic = await createTopic();
    const produceRate = await drive(BASELINE_RECORDS, CONCURRENCY, (i) => sendOne(producer, produceTopic, i));

    // Bare end-to-end: the consumer joins, then the clock starts and the records are sent.
    const e2eTopic = await createTopic();
    let e2eStarted = 0;
    const e2e = await bareConsume(kafka, e2eTopic, BASELINE_RECORDS, async () => {
      e2eStarted = performance.now();
      await drive(BASELINE_RECORDS, CONCURRENCY, (i) => sendOne(producer, e2eTopic, i));
    });
    const e2eRate = BASELINE_RECORDS / ((e2e.end - e2eStarted) / 1000);
    await producer.disconnect();

    const log = await createKafkaEventLog({ brokers, clientId: 'bench-adapter' });
    let rates: Awaited<ReturnType<typeof adapterRates>>;
    try {
      rates = await adapterRates(log);
    } finally {
      await log.close();
    }
    created.push(...rates.topics);

    // Bare consume of the records the adapter published.
    const bare = await bareConsume(kafka, rates.topic, RECORDS, () => undefined);
    const consumeRateBare = RECORDS / ((bare.end - bare.joinedAt) / 1000);

    return [
      {
        name: `kafka baseline: bare kafkajs, 1 record per send, ${CONCURRENCY} concurrent senders`,
        perSecond: produceRate,
        baseline: true,
      },
      { name: `kafka event log: publish, ${CONCURRENCY} concurrent publishers`, perSecond: rates.publish },
      {
        name: 'kafka baseline: bare kafkajs, produce and eachMessage consume at once',
        perSecond: e2eRate,
        baseline: true,
      },
      { name: 'kafka event log: end-to-end (publish and consume at once)', perSecond: rates.endToEnd },
      {
        name: 'kafka baseline: bare kafkajs eachMessage consumer, same records',
        perSecond: consumeRateBare,
        baseline: true,
      },
      {
        name: `kafka event log: consume, one group member (concurrency ${CONSUME_CONCURRENCY})`,
        perSecond: rates.consume,
      },
    ];
  } finally {
    await admin
      .deleteTopics({ topics: created })
      .catch((error: unknown) => console.log(`(could not delete bench topics: ${(error as Error).message})`));
    await admin.disconnect();
  }
};

// ---- run --------------------------------------------------------------------------------------

const skipped: string[] = [];
const rows: Row[] = [];
if (ONLY.has('sqlite')) rows.push(...(await sqliteRows()));
if (ONLY.has('postgres')) {
  if (process.env.DATABASE_URL) rows.push(...(await postgresRows(process.env.DATABASE_URL)));
  else skipped.push('postgres (DATABASE_URL is unset)');
}
if (ONLY.has('kafka')) {
  const brokers = (process.env.KAFKA_BROKERS ?? '')
    .split(',')
    .map((b) => b.trim())
    .filter(Boolean);
  if (brokers.length > 0) rows.push(...(await kafkaRows(brokers)));
  else skipped.push('kafka (KAFKA_BROKERS is unset)');
}
report(
  `event log throughput (${describe}; bare one-per-request baselines: ${BASELINE_RECORDS.toLocaleString('en-US')} records)`,
  rows,
);
if (skipped.length > 0) console.log(`(skipped: ${skipped.join(', ')})`);
