/**
 * A TypeBox schema as a JSON Schema document the service serves (draft 2020-12), for downstream
 * systems to validate messages and generate types with
 * (docs/decisions/0024-every-published-message-has-a-schema.md):
 * - plain JSON, with `$schema`, `$id`, `title` and `description` of its own;
 * - every object the schema leaves open is closed (`additionalProperties: false`): the service
 *   writes no other field, which the contract test checks on real messages, and a generated type
 *   then has no index signature. A map (`patternProperties`) is left as it is;
 * - no `$id` inside: a document inlines its parts, and a part's `$id` would clash with the
 *   document of that part when a consumer loads both.
 */
import type { TSchema } from '@sinclair/typebox';
import type { Json } from '../ports/event-store.ts';

export type JsonSchemaDocument = { readonly [key: string]: Json };

type JsonObject = { [key: string]: Json };

export const DRAFT_2020_12 = 'https://json-schema.org/draft/2020-12/schema';

const isObject = (value: Json | undefined): value is JsonObject =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** Keywords whose value is a schema, a list of schemas, or schemas by name. */
const ONE = ['items', 'additionalProperties', 'contains', 'propertyNames', 'unevaluatedProperties'];
const LIST = ['anyOf', 'oneOf', 'prefixItems'];
const BY_NAME = ['properties', 'patternProperties', '$defs'];
/** Keywords closing an object would change the meaning of: none of our schemas uses them. */
const REFUSED = ['allOf', 'not', 'if', 'then', 'else', 'dependentSchemas', '$ref'];

const closed = (node: JsonObject, path: string): JsonObject => {
  const { $id: _id, ...rest } = node;
  for (const keyword of REFUSED)
    if (keyword in rest) throw new Error(`${path}: ${keyword} cannot be closed field by field`);
  const out: JsonObject = { ...rest };
  for (const keyword of ONE) {
    const value = rest[keyword];
    if (isObject(value)) out[keyword] = closed(value, `${path}/${keyword}`);
  }
  for (const keyword of LIST) {
    const value = rest[keyword];
    if (Array.isArray(value))
      out[keyword] = value.map((item, i) => (isObject(item) ? closed(item, `${path}/${keyword}/${i}`) : item));
  }
  for (const keyword of BY_NAME) {
    const value = rest[keyword];
    if (isObject(value))
      out[keyword] = Object.fromEntries(
        Object.entries(value).map(([name, item]) => [
          name,
          isObject(item) ? closed(item, `${path}/${keyword}/${name}`) : item,
        ]),
      );
  }
  if (out.type === 'object' && isObject(out.properties) && !('additionalProperties' in out) && !out.patternProperties)
    out.additionalProperties = false;
  return out;
};

const frozen = <T extends Json>(value: T): T => {
  if (value !== null && typeof value === 'object') for (const item of Object.values(value)) frozen(item);
  return Object.freeze(value);
};

/** The served document of `schema`, under the given id, title and description. */
export const schemaDocument = (
  schema: TSchema,
  head: { $id: string; title: string; description: string },
): JsonSchemaDocument => {
  // JSON drops TypeBox's symbol keys (Kind, Optional): what is left is the JSON Schema.
  const { title: _title, description: _description, ...plain } = JSON.parse(JSON.stringify(schema)) as JsonObject;
  return frozen({ $schema: DRAFT_2020_12, ...head, ...closed(plain, head.$id) });
};
