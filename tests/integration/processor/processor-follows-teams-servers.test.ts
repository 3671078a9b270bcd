/**
 * A processor on its own (scaled out) follows the team events, as the ingress does: its settlements
 * decide on the team states it holds, and without following it held only its own writes, so nearly
 * every settlement after another process's reservation met a version conflict first. Two sets of
 * backends on one PostgreSQL schema stand for two processes: one runs the processor service as
 * `services/processor/main.ts` does, the other writes to a team's stream as an ingress would.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pino from 'pino';
import { loadConfig } from '../../../shared/config.ts';
import { openBackends, type Backends } from '../../../services/runtime/backends.ts';
import { Health } from '../../../services/runtime/health.ts';
import { type Service, startProcessorService } from '../../../services/runtime/services.ts';
import { createTeamWriter } from '../../../services/runtime/team-writer.ts';
import { backend } from '../../support/backends.ts';
import { eventually } from '../../support/eventually.ts';
import { freshSchema } from '../../support/postgres.ts';
import { tempDir } from '../../support/temp-dir.ts';

const postgres = await backend('postgres');
const TEAM_ID = '0193a1b2-0000-7000-8000-0000000000aa';
/** The data directories the test makes, removed at the end. */
const dirs: ReturnType<typeof tempDir>[] = [];
const newDir = () => {
  const dir = tempDir();
  dirs.push(dir);
  return dir.path;
};

const open = async (schema: string, dataDir: string): Promise<Backends> => {
  const config = loadConfig({
    DATABASE_URL: postgres.url!,
    DATABASE_SCHEMA: schema,
    DATA_KEY_SECRET: 'processor-follows-teams-secret-0123456789abcdef',
    DATA_DIR: dataDir,
    KAFKA_BROKERS: '',
    REDIS_URL: '',
    KURRENTDB_URL: '',
  });
  return openBackends(config, pino({ level: 'silent' }));
};

/** The processor service as `services/processor/main.ts` starts it. */
const startProcessor = (backends: Backends, health: Health): Promise<Service> => {
  const config = loadConfig({ DATABASE_URL: postgres.url!, DATA_DIR: newDir(), KAFKA_BROKERS: '' });
  return startProcessorService(config, backends, pino({ level: 'silent' }), health, { followTeams: true });
};

let schema: ReturnType<typeof freshSchema>;
before(() => {
  if (postgres.skip) return;
  schema = freshSchema(postgres.url!);
});
after(async () => {
  await schema?.drop();
  for (const dir of dirs) dir.remove();
});

test(
  'a processor started on its own holds the team states other processes write, and reports following them in /readyz',
  { skip: postgres.skip, timeout: 60_000 },
  async () => {
    // The other process: creates the team and reserves on it, as an ingress would.
    const writerBackends = await open(schema.schema, newDir());
    const processorBackends = await open(schema.schema, newDir());
    const health = new Health(30_000);
    const processor = await startProcessor(processorBackends, health);
    try {
      const writer = createTeamWriter(writerBackends.eventStore).repository;
      const now = new Date().toISOString();
      await writer.handle(TEAM_ID, {
        type: 'CreateTeam',
        teamId: TEAM_ID,
        name: 'Followed',
        owner: { email: 'owner@example.test', name: 'Owner' },
        capacityMinutes: 600,
        now,
      });
      for (const callId of ['0193a1b2-0000-7000-8000-000000000101', '0193a1b2-0000-7000-8000-000000000102'])
        await writer.handle(TEAM_ID, { type: 'ReserveCapacity', callId, minutes: 5, now });

      const { directory } = processorBackends.teams;
      await eventually(
        () => {
          const held = directory.get(TEAM_ID);
          assert.equal(held?.version, 2, 'the processor holds the team at the other process’s last revision');
        },
        { timeoutMs: 10_000 },
      );
      const report = health.report();
      assert.equal(report.components['team-directory']?.ready, true, JSON.stringify(report));
    } finally {
      await processor.stop();
      await processorBackends.close();
      await writerBackends.close();
    }
  },
);
