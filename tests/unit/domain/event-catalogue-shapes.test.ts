/**
 * What a catalogue tells of each type's data (docs/decisions/0016-event-catalogues-and-upcasting.md):
 * its version, today's schema, and the schema every stored version fits — which a reader of the
 * store itself meets, since it sees events before they are upcast.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { callEvents } from '../../../shared/domain/call/call-catalogue.ts';
import { eventCatalogue } from '../../../shared/domain/event-catalogue.ts';

type Counted = { type: 'Counted'; data: { count: number; note: string } };
type Reset = { type: 'Reset'; data: { at: string } };

const Today = Type.Object({ count: Type.Number(), note: Type.String() });
const Reset = Type.Object({ at: Type.String() });

describe('event catalogue shapes', () => {
  test('a type of one version: version 1, and every stored version fits today’s schema', () => {
    const catalogue = eventCatalogue<Reset>('counter', { Reset: { schema: Reset } });
    assert.deepEqual(catalogue.shapeOf('Reset'), { version: 1, schema: Reset, everyVersion: Reset });
  });

  test('a type with upcasters: its version counts them; without everyVersion no schema is claimed for every version', () => {
    const upcasters = [(data: unknown) => ({ ...(data as object), note: '' })];
    const without = eventCatalogue<Counted>('counter', { Counted: { schema: Today, upcasters } });
    assert.deepEqual(without.shapeOf('Counted'), { version: 2, schema: Today, everyVersion: undefined });
    const AnyVersion = Type.Object({ count: Type.Number(), note: Type.Optional(Type.String()) });
    const withEvery = eventCatalogue<Counted>('counter', {
      Counted: { schema: Today, upcasters, everyVersion: AnyVersion },
    });
    assert.equal(withEvery.shapeOf('Counted').everyVersion, AnyVersion);
  });

  test('TranscriptRecorded: today’s version needs segments; the schema of every version takes a version-1 event without them', () => {
    const shape = callEvents.shapeOf('TranscriptRecorded');
    const v1 = {
      source: 'inline',
      text: 'Rep: hi',
      truncated: false,
      durationSeconds: 1,
      engine: null,
      at: '2026-01-01T00:00:00.000Z',
    };
    assert.equal(shape.version, 2);
    assert.equal(Value.Check(shape.schema, v1), false);
    assert.equal(Value.Check(shape.everyVersion!, v1), true);
    assert.equal(Value.Check(shape.everyVersion!, { ...v1, segments: [] }), true);
  });
});
