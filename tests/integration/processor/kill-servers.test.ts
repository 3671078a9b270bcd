import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { backend } from '../../support/backends.ts';
import { freshSchema } from '../../support/postgres.ts';
import { killSuite } from './kill-suite.ts';

const postgres = await backend('postgres');
const kafka = await backend('kafka');

killSuite(
  'Kafka + PostgreSQL',
  async () => {
    const schema = freshSchema(postgres.url!);
    return {
      env: {
        DATABASE_URL: postgres.url!,
        DATABASE_SCHEMA: schema.schema,
        KAFKA_BROKERS: kafka.url!,
        TOPIC_PREFIX: `kill-${randomUUID().slice(0, 8)}.`,
        TOPIC_PARTITIONS: '3',
      },
      async callEvents() {
        const client = new pg.Client({ connectionString: postgres.url! });
        await client.connect();
        try {
          const exists = await client.query(`SELECT to_regclass('${schema.schema}.events') AS t`);
          if (!exists.rows[0].t) return [];
          const { rows } = await client.query(
            `SELECT stream_id AS "streamId", type FROM ${schema.schema}.events WHERE stream_id LIKE 'call-%' ORDER BY stream_id, revision`,
          );
          return rows as { streamId: string; type: string }[];
        } finally {
          await client.end();
        }
      },
      cleanup: () => schema.drop(),
    };
  },
  { skip: postgres.skip ?? kafka.skip, kills: 2 },
);
