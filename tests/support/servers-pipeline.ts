/**
 * The whole pipeline (ingress, processor, projections) in this process on Kafka + PostgreSQL (a
 * fresh schema), the server twin of `embedded-pipeline.ts`. `skip` says why it cannot run here
 * (and `backend()` fails instead when REQUIRE_BACKENDS names the missing backend).
 */
import { createKafkaEventLog } from '../../shared/adapters/event-log/kafka-event-log.ts';
import { createPostgresEventStore } from '../../shared/adapters/event-store/postgres-event-store.ts';
import { createPostgresReadModels } from '../../shared/adapters/read-models/postgres-read-models.ts';
import { backend } from './backends.ts';
import { type EmbeddedPipeline, TEST_KEY_ENCRYPTION_KEY } from './embedded-pipeline.ts';
import { createPersonalData } from '../../shared/adapters/crypto/personal-data.ts';
import { createPostgresDataKeys } from '../../shared/adapters/data-keys/postgres-data-keys.ts';
import { createSealedEventStore } from '../../shared/adapters/event-store/sealed-event-store.ts';
import { createPipelineHarness, type PipelineOptions, type StepOverrides } from './pipeline-harness.ts';
import { freshSchema } from './postgres.ts';

const postgres = await backend('postgres');
const kafka = await backend('kafka');

/** Why the server pipeline cannot run here, or undefined when it can. */
export const serversSkip: string | undefined = postgres.skip ?? kafka.skip;

export const openServersPipeline = async (
  overrides: StepOverrides = {},
  options: PipelineOptions = {},
): Promise<EmbeddedPipeline> => {
  const schema = freshSchema(postgres.url!);
  const storedEvents = await createPostgresEventStore({
    connectionString: postgres.url!,
    schema: schema.schema,
    pollMs: 50,
  });
  const personalData = options.erasure
    ? createPersonalData(
        await createPostgresDataKeys(
          { connectionString: postgres.url!, schema: schema.schema },
          TEST_KEY_ENCRYPTION_KEY,
        ),
      )
    : undefined;
  const eventStore = personalData ? createSealedEventStore(storedEvents, personalData) : storedEvents;
  const readModels = await createPostgresReadModels({ connectionString: postgres.url!, schema: schema.schema });
  const eventLog = await createKafkaEventLog({ brokers: kafka.url!.split(',') });
  const h = await createPipelineHarness(
    { eventStore, eventLog, readModels, personalData, storedEvents },
    overrides,
    options,
  );
  return {
    h,
    storedEvents,
    postgres: { connectionString: postgres.url!, schema: schema.schema },
    async close() {
      await h.close();
      await eventLog.close();
      await readModels.close();
      await personalData?.close();
      await eventStore.close();
      await schema.drop();
    },
  };
};
