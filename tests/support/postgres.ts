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

/**
 * A database no other test uses, for a fault that takes a whole database away (ALTER DATABASE …
 * ALLOW_CONNECTIONS false); `url` reaches it as `connectionString` reaches its own, `drop` removes
 * it with every session still open on it.
 */
export const freshDatabase = async (connectionString: string) => {
  const name = `t_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  const admin = async <T>(work: (client: pg.Client) => Promise<T>): Promise<T> => {
    const client = new pg.Client({ connectionString });
    await client.connect();
    try {
      return await work(client);
    } finally {
      await client.end();
    }
  };
  await admin((client) => client.query(`CREATE DATABASE ${name}`));
  const url = new URL(connectionString);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    /** Runs statements on the server as the test's own user, from the database `connectionString` names. */
    admin,
    async drop() {
      await admin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
  };
};
