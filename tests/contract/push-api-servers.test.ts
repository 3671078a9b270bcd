import { createKafkaEventLog } from '../../shared/adapters/event-log/kafka-event-log.ts';
import { createPostgresEventLog } from '../../shared/adapters/event-log/sql-event-log.ts';
import { createPostgresEventStore } from '../../shared/adapters/event-store/postgres-event-store.ts';
import { ALL_TOPICS } from '../../shared/topics.ts';
import { backend } from '../support/backends.ts';
import { freshSchema } from '../support/postgres.ts';
import { pushApiContract } from './push-api.ts';

const postgres = await backend('postgres');
const kafka = await backend('kafka');

pushApiContract(
  'Kafka event log + PostgreSQL event store',
  async () => {
    const schema = freshSchema(postgres.url!);
    const spare = freshSchema(postgres.url!);
    const eventStore = await createPostgresEventStore({ connectionString: postgres.url!, schema: schema.schema });
    const eventLog = await createKafkaEventLog({ brokers: kafka.url!.split(',') });
    await eventLog.ensureTopics(ALL_TOPICS.map((name) => ({ name, partitions: 3 })));
    return {
      eventStore,
      eventLog,
      async brokenEventLog() {
        // A log whose connections are closed: every publish fails.
        const log = await createPostgresEventLog({ connectionString: postgres.url!, schema: spare.schema });
        await log.ensureTopics(ALL_TOPICS.map((name) => ({ name, partitions: 3 })));
        await log.close();
        return log;
      },
      async cleanup() {
        await eventLog.close();
        await eventStore.close();
        await schema.drop();
        await spare.drop();
      },
    };
  },
  { skip: postgres.skip ?? kafka.skip },
);
