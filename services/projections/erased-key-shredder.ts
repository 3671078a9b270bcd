/**
 * Destroys the data key of every call the feed shows erased (docs/decisions/0014-erasure-crypto-shredding.md).
 * The erasing request destroys it right after appending CallErased; this follower makes sure of it
 * when that process stopped in between. Destroying is idempotent, so a redelivered batch is harmless.
 */
import type { PersonalData } from '../../shared/adapters/crypto/personal-data.ts';
import { callEvents } from '../../shared/domain/call/call-catalogue.ts';
import { erasedCallIds } from '../../shared/domain/call/call-history.ts';
import type { EventStore, Subscription } from '../../shared/ports/event-store.ts';

export const ERASED_KEY_SHREDDER = 'erasure.data-keys';

export const startErasedKeyShredder = (deps: { eventStore: EventStore; personalData: PersonalData }): Subscription =>
  deps.eventStore.subscribeToAll({
    checkpointId: ERASED_KEY_SHREDDER,
    batchSize: 1000,
    // CallErased is a call event: the other categories are never read.
    categories: [callEvents.category],
    handler: async (events) => {
      for (const callId of erasedCallIds(events)) await deps.personalData.erase(callId);
    },
  });
