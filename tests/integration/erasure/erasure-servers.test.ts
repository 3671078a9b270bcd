/**
 * The erasure proof on Kafka + PostgreSQL: every row of every table of the service's database is
 * searched (as pg_dump would write it, `row::text`), and the Kafka topics through the admin reader.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { API_KEY_SECRET } from '../../support/ingress-harness.ts';
import { backend } from '../../support/backends.ts';
import { scratchDatabase } from '../faults/scaled-out.ts';
import { erasureProof } from './erasure-suite.ts';

const postgres = await backend('postgres');
const kafka = await backend('kafka');

erasureProof(
  'Kafka + PostgreSQL',
  async () => {
    const database = await scratchDatabase(postgres.url!);
    const topicPrefix = `e${randomUUID().slice(0, 8)}.`;
    return {
      env: {
        DATABASE_URL: database.url,
        KAFKA_BROKERS: kafka.url!,
        REDIS_URL: '',
        TOPIC_PREFIX: topicPrefix,
        TOPIC_PARTITIONS: '3',
        API_KEY_SECRET,
      },
      topicPrefix,
      // Every row of every table, read while the service runs and again after it stopped.
      storageHoldingWhileRunning: (needles) => rowsHolding(database.url, needles),
      storageHolding: (needles) => rowsHolding(database.url, needles),
      cleanup: () => database.drop(),
    };
  },
  { skip: postgres.skip ?? kafka.skip },
);

const rowsHolding = async (url: string, needles: string[]): Promise<string[]> => {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows: tables } = await client.query<{ schema: string; name: string }>(
      "SELECT table_schema AS schema, table_name AS name FROM information_schema.tables WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')",
    );
    const found: string[] = [];
    for (const { schema, name } of tables) {
      const table = `"${schema}"."${name}"`;
      for (const needle of needles) {
        const { rows } = await client.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM ${table} t WHERE strpos(t::text, $1) > 0`,
          [needle],
        );
        if (rows[0]!.n > 0) found.push(`${table}: ${needle}`);
      }
    }
    return found;
  } finally {
    await client.end();
  }
};
