/**
 * Decoding through a catalogue once per stored event: the embedded store hands every follower of
 * its feed the same frozen objects, and each is upcast and checked once, not once per follower.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Type } from '@sinclair/typebox';
import { EventDecodeError, eventCatalogue } from '../../../shared/domain/event-catalogue.ts';
import type { Json, RecordedEvent } from '../../../shared/ports/event-store.ts';

type CounterEvent = { type: 'Counted'; data: { count: number; note: string } };

/** A catalogue whose one upcaster counts how often it runs (version 1 had no `note`). */
const counting = () => {
  const runs = { upcasts: 0 };
  const catalogue = eventCatalogue<CounterEvent>('counter', {
    Counted: {
      schema: Type.Object({ count: Type.Number(), note: Type.String() }),
      upcasters: [
        (data) => {
          runs.upcasts++;
          return { ...(data as object), note: '' };
        },
      ],
    },
  });
  return { catalogue, runs };
};

const stored = (data: Json, revision = 0): RecordedEvent => ({
  id: `e${revision}`,
  streamId: 'counter-c1',
  revision,
  position: BigInt(revision + 1),
  type: 'Counted',
  data,
  metadata: {},
  recordedAt: new Date('2026-11-27T10:00:00.000Z'),
});

describe('event catalogue decode', () => {
  test('a frozen stored event is decoded once: every reader gets the same frozen decoded event', () => {
    const { catalogue, runs } = counting();
    const event = Object.freeze(stored({ count: 3 }));
    const first = catalogue.decode(event);
    const second = catalogue.decode(event);
    assert.equal(runs.upcasts, 1);
    assert.equal(second, first);
    assert.deepEqual(first.data, { count: 3, note: '' });
    assert.ok(Object.isFrozen(first));
  });

  test('an event that is not frozen (another store may reuse it) is decoded at each call', () => {
    const { catalogue, runs } = counting();
    const event = stored({ count: 3 });
    const first = catalogue.decode(event);
    const second = catalogue.decode(event);
    assert.equal(runs.upcasts, 2);
    assert.notEqual(second, first);
    assert.deepEqual(second.data, first.data);
  });

  test('an event that does not decode fails at every decode, naming the field', () => {
    const { catalogue } = counting();
    const event = Object.freeze(stored({ count: 'three' }, 4));
    for (let attempt = 0; attempt < 2; attempt++) {
      assert.throws(
        () => catalogue.decode(event),
        (error: unknown) => error instanceof EventDecodeError && error.field === '/count' && error.revision === 4,
      );
    }
  });

  test('distinct stored events with equal content are decoded each on their own', () => {
    const { catalogue, runs } = counting();
    catalogue.decode(Object.freeze(stored({ count: 1 }, 1)));
    catalogue.decode(Object.freeze(stored({ count: 1 }, 1)));
    assert.equal(runs.upcasts, 2);
  });
});
