import { randomUUID } from 'node:crypto';
import pg from 'pg';

/** A schema name no other test uses; `drop` removes it and everything in it. */
export const freshSchema = (connectionString: string) => {
  const schema = `t_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  return {
    schema,
    async drop() {
      const client = new pg.Client({ connectionString });
      await client.connect();
      try {
        await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      } finally {
        await client.end();
      }
    },
  };
};
