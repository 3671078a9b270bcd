import { createKafkaEventLog } from '../../../shared/adapters/event-log/kafka-event-log.ts';
import { createPostgresEventStore } from '../../../shared/adapters/event-store/postgres-event-store.ts';
import { backend } from '../../support/backends.ts';
import { freshSchema } from '../../support/postgres.ts';
import { processorSuite } from './processor-suite.ts';

const postgres = await backend('postgres');
const kafka = await backend('kafka');

processorSuite(
  'Kafka + PostgreSQL',
  async () => {
    const schema = freshSchema(postgres.url!);
    const eventStore = await createPostgresEventStore({
      connectionString: postgres.url!,
      schema: schema.schema,
      pollMs: 50,
    });
    const eventLog = await createKafkaEventLog({ brokers: kafka.url!.split(',') });
    return {
      eventStore,
      eventLog,
      async cleanup() {
        await eventLog.close();
        await eventStore.close();
        await schema.drop();
      },
    };
  },
  { skip: postgres.skip ?? kafka.skip },
);
