/**
 * An aggregate's event catalogue (docs/decisions/0016-event-catalogues-and-upcasting.md): its
 * stream category, and per event type the TypeBox schema of today's shape plus the upcasters that
 * bring an older stored shape up to it. This is the one place stored event data becomes a typed
 * event: every reader decodes through a catalogue, so no reader casts `data`.
 *
 * - A stream of the aggregate is `{category}-{id}` (`streamId`, `idOf`): the one stream-id helper
 *   of the category.
 * - A stored event says which version of its type's shape it has in its metadata
 *   (`schemaVersion`); an event without it is version 1. `encode` writes the current version.
 * - `decode` runs the upcasters from the stored version to the current one, then checks the result
 *   against the current schema. An event that does not decode is never folded: `EventDecodeError`
 *   names the stream, the revision, the type and the field.
 * - `shapeOf` tells a type's version, today's schema and the schema every stored version fits,
 *   from which the JSON Schemas of published events are derived
 *   (docs/decisions/0024-every-published-message-has-a-schema.md).
 */
import { FormatRegistry, type TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import type { EventStore, Json, NewEvent, ReadStreamOptions, RecordedEvent } from '../ports/event-store.ts';

// The formats the event schemas use (TypeBox checks a format only once it is registered).
if (!FormatRegistry.Has('date-time'))
  FormatRegistry.Set('date-time', (value) => /^\d{4}-\d\d-\d\dT/.test(value) && !Number.isNaN(Date.parse(value)));
if (!FormatRegistry.Has('uuid'))
  FormatRegistry.Set('uuid', (value) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value));

/** The metadata key that holds the version of an event's data shape. */
export const SCHEMA_VERSION = 'schemaVersion';

/** What an upcaster sees of the stored event besides its data (a shape may need the time it was stored). */
export interface StoredEnvelope {
  streamId: string;
  revision: number;
  recordedAt: Date;
}

/**
 * Turns data of one version into data of the next. Its input is what the previous version's shape
 * promised, unchecked (`unknown`): the current schema checks the end result.
 */
export type Upcaster = (data: unknown, envelope: StoredEnvelope) => unknown;

export interface EventDefinition<S extends TSchema = TSchema> {
  /** Today's shape. */
  schema: S;
  /** Oldest first: `upcasters[0]` turns version 1 into version 2, and so on. Today's version is their count + 1. */
  upcasters?: readonly Upcaster[];
  /**
   * A schema the data of every stored version fits, before upcasting: what a reader of the store
   * itself sees, such as the relay that publishes call events as stored. Only a type with
   * upcasters needs one; a type with one version has `schema`.
   */
  everyVersion?: TSchema;
}

/** What a catalogue says of one event type's data. */
export interface EventShape {
  /** Today's version (the `schemaVersion` `encode` writes). */
  version: number;
  /** Today's shape, which `decode` checks after upcasting. */
  schema: TSchema;
  /** The shape every stored version fits; undefined when the type has older versions and no such schema. */
  everyVersion: TSchema | undefined;
}

/** An event of the aggregate as its decider sees it. */
export interface TypedEvent {
  type: string;
  data: unknown;
}

/** The definitions a catalogue of events `E` needs: one per type, whose schema describes that type's data. */
export type DefinitionsOf<E extends TypedEvent> = {
  [K in E['type']]: EventDefinition<TSchema & { static: Extract<E, { type: K }>['data'] }>;
};

/** A stored event decoded: the envelope of the store with the typed event in place of type and data. */
export type Decoded<E extends TypedEvent> = E extends TypedEvent ? Omit<RecordedEvent, 'type' | 'data'> & E : never;

/** A stored event that does not have the shape its type and version say. */
export class EventDecodeError extends Error {
  override readonly name = 'EventDecodeError';
  readonly code = 'EVENT_DECODE_FAILED';
  /** Not retriable: the stored event stays as it is; an operator decides (skip, or a new upcaster). */
  readonly retriable = false;
  /** The event is at fault, not the store (docs/decisions/0025-what-blames-the-data.md). */
  readonly dataAtFault = true;
  constructor(
    readonly streamId: string,
    readonly revision: number,
    readonly type: string,
    /** JSON pointer into the data (`/segments/0/text`), or '' for the event as a whole. */
    readonly field: string,
    readonly reason: string,
  ) {
    super(
      `event ${type} at revision ${revision} of stream ${streamId} does not decode: ${field === '' ? 'the event' : `field ${field}`}: ${reason}`,
    );
  }
}

export interface EventCatalogue<E extends TypedEvent> {
  /** The stream category (`call`), as the event store's `categories` option takes it. */
  readonly category: string;
  /** The stream of the aggregate with this id: `{category}-{id}`. */
  readonly streamId: (id: string) => string;
  /** The aggregate id of a stream of this category, or undefined for any other stream. */
  readonly idOf: (streamId: string) => string | undefined;
  /** The stored event as a typed event of this catalogue. @throws EventDecodeError */
  readonly decode: (event: RecordedEvent) => Decoded<E>;
  /**
   * Data of type `type` and today's version from elsewhere than the store (a log record of the
   * event): the event, or the field it fails at and why.
   */
  readonly parse: <K extends E['type']>(
    type: K,
    data: unknown,
  ) => { ok: true; event: Extract<E, { type: K }> } | { ok: false; field: string; reason: string };
  /** An event to append: its data, and its shape's version when past 1. */
  readonly encode: (event: E, metadata?: Record<string, Json>) => NewEvent;
  /** The shape of each type's data (the source of the JSON Schemas the service serves for them). */
  readonly shapeOf: (type: E['type']) => EventShape;
}

/** A value that is JSON: what an event's data is once decoded, since the store holds JSON. */
const asJson = (value: unknown): Json => value as Json;

/** The first place `data` fails its schema, if any. */
const firstProblem = (check: TypeCheck<TSchema>, data: unknown): { field: string; reason: string } | undefined => {
  if (check.Check(data)) return undefined;
  const first = check.Errors(data).First();
  return { field: first?.path ?? '', reason: first?.message ?? 'does not match the schema' };
};

/** Builds a catalogue; `E` is the aggregate's event union, `definitions` one entry per type. */
export const eventCatalogue = <E extends TypedEvent>(
  category: string,
  definitions: DefinitionsOf<E>,
): EventCatalogue<E> => {
  const prefix = `${category}-`;
  const entries = new Map<
    string,
    { check: TypeCheck<TSchema>; upcasters: readonly Upcaster[]; definition: EventDefinition }
  >();
  for (const [type, definition] of Object.entries<EventDefinition>(definitions)) {
    entries.set(type, {
      check: TypeCompiler.Compile(definition.schema),
      upcasters: definition.upcasters ?? [],
      definition,
    });
  }
  const versionOf = (type: string): number => (entries.get(type)?.upcasters.length ?? 0) + 1;
  /**
   * Decoded events by the stored one, for stored events that are frozen: the embedded store hands
   * every follower of its feed the same objects, so each event is upcast and checked once, not once
   * per follower. The decoded event is frozen too, as the stored one was.
   */
  const decodedOf = new WeakMap<RecordedEvent, Decoded<E>>();
  const decode = (event: RecordedEvent): Decoded<E> => {
    const fail = (field: string, reason: string): never => {
      throw new EventDecodeError(event.streamId, event.revision, event.type, field, reason);
    };
    if (!event.streamId.startsWith(prefix)) fail('', `the stream is not of category ${category}`);
    const entry = entries.get(event.type);
    if (!entry) return fail('', `${event.type} is not an event type of category ${category}`);
    const stored = event.metadata[SCHEMA_VERSION] ?? 1;
    const current = entry.upcasters.length + 1;
    if (typeof stored !== 'number' || !Number.isInteger(stored) || stored < 1 || stored > current)
      fail('', `${SCHEMA_VERSION} ${JSON.stringify(stored)} is not a version of ${event.type} (1 to ${current})`);
    let data: unknown = event.data;
    for (let version = stored as number; version < current; version++) {
      try {
        data = entry.upcasters[version - 1]!(data, event);
      } catch (error) {
        fail('', `upcasting version ${version} to ${version + 1} failed: ${(error as Error).message}`);
      }
    }
    const problem = firstProblem(entry.check, data);
    if (problem) fail(problem.field, problem.reason);
    // Checked against the schema of this type, whose static type is E's data for this type.
    return { ...event, data: asJson(data) } as unknown as Decoded<E>;
  };

  return {
    category,
    streamId: (id) => `${prefix}${id}`,
    idOf: (streamId) =>
      streamId.startsWith(prefix) && streamId.length > prefix.length ? streamId.slice(prefix.length) : undefined,
    decode: (event) => {
      if (!Object.isFrozen(event)) return decode(event);
      const known = decodedOf.get(event);
      if (known) return known;
      // A failure is not kept: the same event fails again, with the same error, at each decode.
      const decoded = Object.freeze(decode(event)) as Decoded<E>;
      decodedOf.set(event, decoded);
      return decoded;
    },
    parse: (type, data) => {
      const entry = entries.get(type);
      if (!entry) return { ok: false, field: '', reason: `${type} is not an event type of category ${category}` };
      const problem = firstProblem(entry.check, data);
      if (problem) return { ok: false, ...problem };
      // As in decode: checked against the schema of this type.
      return { ok: true, event: { type, data } as unknown as Extract<E, { type: typeof type }> };
    },
    encode: (event, metadata) => {
      const version = versionOf(event.type);
      const meta = version > 1 ? { ...metadata, [SCHEMA_VERSION]: version } : metadata;
      return { type: event.type, data: asJson(event.data), ...(meta ? { metadata: meta } : {}) };
    },
    shapeOf: (type) => {
      const entry = entries.get(type);
      if (!entry) throw new Error(`${type} is not an event type of category ${category}`);
      const { schema, everyVersion } = entry.definition;
      return {
        version: entry.upcasters.length + 1,
        schema,
        everyVersion: everyVersion ?? (entry.upcasters.length === 0 ? schema : undefined),
      };
    },
  };
};

/** The events of one stream, decoded: `readStream(catalogue, id)` of the issue's port, over any event store. */
export const readStream = async <E extends TypedEvent>(
  store: Pick<EventStore, 'readStream'>,
  catalogue: EventCatalogue<E>,
  id: string,
  options?: ReadStreamOptions,
): Promise<Decoded<E>[]> =>
  (await store.readStream(catalogue.streamId(id), options)).map((event) => catalogue.decode(event));
