import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { createPostgresEventLog } from '../../shared/adapters/event-log/sql-event-log.ts';
import { EventLogUnavailableError } from '../../shared/ports/event-log.ts';
import { backend } from '../support/backends.ts';
import { freshSchema } from '../support/postgres.ts';
import { eventLogConformance } from './event-log.ts';
import { sqlLogPruning } from './sql-event-log-pruning.ts';
import { sqlLogReadSized } from './sql-event-log-read.ts';

const b = await backend('postgres');
const schema = b.url ? freshSchema(b.url) : undefined;
after(async () => {
  await schema?.drop();
});

// Each instance is its own pool on the same schema, like two processes.
eventLogConformance(
  'postgres',
  async () => ({
    log: await createPostgresEventLog({ connectionString: b.url!, schema: schema!.schema, sessionTimeoutMs: 1000 }),
  }),
  { skip: b.skip },
);

void sqlLogPruning(
  'postgres',
  async (retentionMs) =>
    createPostgresEventLog({ connectionString: b.url!, schema: schema!.schema, sessionTimeoutMs: 1000, retentionMs }),
  { skip: b.skip },
);

void sqlLogReadSized(
  'postgres',
  async () => createPostgresEventLog({ connectionString: b.url!, schema: schema!.schema, sessionTimeoutMs: 1000 }),
  { skip: b.skip },
);

describe('PostgreSQL event log: server unreachable', () => {
  test('opening the log fails with EventLogUnavailableError (retriable)', { timeout: 20_000 }, async () => {
    await assert.rejects(
      createPostgresEventLog({ connectionString: 'postgres://postgres@127.0.0.1:1/postgres' }),
      (error) => error instanceof EventLogUnavailableError && error.retriable,
    );
  });
});
