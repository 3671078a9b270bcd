import { createKafkaEventLog } from '../../../shared/adapters/event-log/kafka-event-log.ts';
import { createPostgresEventLog } from '../../../shared/adapters/event-log/sql-event-log.ts';
import { createPostgresEventStore } from '../../../shared/adapters/event-store/postgres-event-store.ts';
import { createPostgresReadModels } from '../../../shared/adapters/read-models/postgres-read-models.ts';
import { backend } from '../../support/backends.ts';
import { freshSchema } from '../../support/postgres.ts';
import { poisonSuite } from './poison-suite.ts';

const postgres = await backend('postgres');
const kafka = await backend('kafka');

const onPostgres = async (eventLogOn: 'postgres' | 'kafka') => {
  const schema = freshSchema(postgres.url!);
  const eventStore = await createPostgresEventStore({
    connectionString: postgres.url!,
    schema: schema.schema,
    pollMs: 50,
  });
  const readModels = await createPostgresReadModels({ connectionString: postgres.url!, schema: schema.schema });
  const eventLog =
    eventLogOn === 'kafka'
      ? await createKafkaEventLog({ brokers: kafka.url!.split(',') })
      : await createPostgresEventLog({ connectionString: postgres.url!, schema: schema.schema });
  return {
    eventStore,
    eventLog,
    readModels,
    async cleanup() {
      await eventLog.close();
      await readModels.close();
      await eventStore.close();
      await schema.drop();
    },
  };
};

poisonSuite('PostgreSQL (table log)', () => onPostgres('postgres'), { skip: postgres.skip, storeRefusesNul: true });
poisonSuite('Kafka + PostgreSQL', () => onPostgres('kafka'), {
  skip: postgres.skip ?? kafka.skip,
  storeRefusesNul: true,
});
