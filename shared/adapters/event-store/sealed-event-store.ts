/**
 * An event store whose call events keep their personal fields encrypted at rest
 * (docs/decisions/0014-erasure-crypto-shredding.md): `append` seals the personal fields of each
 * event of a `call-{callId}` stream under the call's data key; every read (streams, the feed,
 * subscriptions) opens them. This is where stored events are decoded, so everything above it works
 * on plain events and nothing else decrypts. `stored` is the store underneath, for a reader that
 * forwards events as stored (the call-events relay publishes them still sealed).
 */
import type { PersonalData } from '../crypto/personal-data.ts';
import { callIdOfStream } from '../../domain/call/call-catalogue.ts';
import { EventDataAtFaultError, isDataAtFault } from '../../ports/data-at-fault.ts';
import type { EventStore, NewEvent, RecordedEvent } from '../../ports/event-store.ts';

export type SealedEventStore = EventStore & { readonly stored: EventStore };

export const createSealedEventStore = (stored: EventStore, personal: PersonalData): SealedEventStore => {
  /**
   * Opened events by the stored one: the SQLite store hands every subscriber the same (frozen)
   * objects. The opening itself is kept, not only its result: the followers woken by one append
   * read the same batch at once, and each would otherwise open it again while the first waits.
   */
  const opened = new WeakMap<RecordedEvent, Promise<RecordedEvent>>();

  const openOne = (event: RecordedEvent): RecordedEvent | Promise<RecordedEvent> => {
    const callId = callIdOfStream(event.streamId);
    if (callId === undefined || !personal.isSealed(event.data)) return event;
    const known = opened.get(event);
    if (known) return known;
    const opening = personal.open(callId, event.type, event.data).then((data) => Object.freeze({ ...event, data }));
    if (Object.isFrozen(event)) {
      opened.set(event, opening);
      // A failed opening (the key store unavailable) is not kept: the next read tries again.
      opening.catch(() => opened.delete(event));
    }
    return opening;
  };
  /**
   * Every event of a batch is opened at once, not one after another: the keys of its calls that are
   * not cached yet are then looked up together (the key store's lookups share a query; one after
   * another, a follower of the feed made about one round trip per call). Events at `skipped`
   * positions are left as stored. When one does not open, the events before it come back opened,
   * with its index and error.
   */
  const openBatch = async (
    events: RecordedEvent[],
    skipped?: ReadonlySet<bigint>,
  ): Promise<{ opened: RecordedEvent[]; failed?: { index: number; error: unknown } }> => {
    const settled = await Promise.allSettled(
      events.map((event) => Promise.resolve(skipped?.has(event.position) ? event : openOne(event))),
    );
    const bad = settled.findIndex((result) => result.status === 'rejected');
    const opened = (bad === -1 ? settled : settled.slice(0, bad)).map(
      (result) => (result as PromiseFulfilledResult<RecordedEvent>).value,
    );
    if (bad !== -1) return { opened, failed: { index: bad, error: (settled[bad] as PromiseRejectedResult).reason } };
    return { opened: opened.some((event, i) => event !== events[i]) ? opened : events };
  };
  const openAll = async (events: RecordedEvent[]): Promise<RecordedEvent[]> => {
    const { opened, failed } = await openBatch(events);
    if (failed) throw failed.error;
    return opened;
  };
  const sealAll = async (streamId: string, events: NewEvent[]): Promise<NewEvent[]> => {
    const callId = callIdOfStream(streamId);
    if (callId === undefined) return events;
    return Promise.all(
      events.map(async (event) => ({ ...event, data: await personal.seal(callId, event.type, event.data) })),
    );
  };

  return {
    stored,
    async append(streamId, events, options) {
      return stored.append(streamId, await sealAll(streamId, events), options);
    },
    async readStream(streamId, options) {
      return openAll(await stored.readStream(streamId, options));
    },
    async readAll(options) {
      return openAll(await stored.readAll(options));
    },
    subscribeToAll(options) {
      return stored.subscribeToAll({
        ...options,
        handler: async (events) => {
          const { opened, failed } = await openBatch(events, options.skipped);
          if (!failed) return options.handler(opened);
          // The events before the first that does not open are handed on, so a follower stops on
          // that one (its checkpoint just before it), not on the first of its batch.
          if (opened.length > 0) await options.handler(opened);
          // Proven bad (its sealed fields do not open with its call's key): named, so a projection
          // stops on it and an operator can skip it. Anything else (the key store down) is retried.
          throw isDataAtFault(failed.error)
            ? new EventDataAtFaultError(events[failed.index]!, failed.error)
            : failed.error;
        },
      });
    },
    headPosition: () => stored.headPosition(),
    readCheckpoint: (id) => stored.readCheckpoint(id),
    storeCheckpoint: (id, position) => stored.storeCheckpoint(id, position),
    readSnapshot: (name) => stored.readSnapshot(name),
    storeSnapshot: (name, snapshot) => stored.storeSnapshot(name, snapshot),
    close: () => stored.close(),
  };
};
