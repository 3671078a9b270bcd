/**
 * The JSON Schema of a message as it goes out on its topic, derived from the schema of its payload
 * with the personal fields open (docs/decisions/0014-erasure-crypto-shredding.md): the fields
 * `PERSONAL_FIELDS` lists for the payload's type, the list the sealing itself follows, are taken
 * out, and `sealed` is declared, so the document cannot disagree with the messages.
 */
import { Kind, KindGuard, type TObject, type TProperties, type TUnion, Type } from '@sinclair/typebox';
import { PERSONAL_FIELDS, SEALED_FIELD, SEALED_VERSION } from './personal-fields.ts';

/** What an object schema says besides its properties (title, description, additionalProperties…). */
const optionsOf = (schema: TObject) => {
  const { [Kind]: _kind, type: _type, properties: _properties, required: _required, ...options } = schema;
  return options;
};

/** What a union says besides its members (description, whether it is optional). */
const unionOptionsOf = (schema: TUnion) => {
  const { [Kind]: _kind, anyOf: _anyOf, ...options } = schema;
  return options;
};

/** `schema` without the fields at `paths`, keeping its options. */
const objectWithout = (schema: TObject, paths: ReadonlyArray<readonly string[]>): TObject =>
  Type.Object(withoutFields(schema, paths), optionsOf(schema));

/**
 * The properties of `schema` without the fields at `paths` (property names from `schema` down); an
 * object on a path keeps its other properties and its options, and so does each object of a union
 * on a path (`attributedTo`: a member or the owner). A path the schema does not have throws: the
 * field would travel sealed without the document saying so.
 */
const withoutFields = (schema: TObject, paths: ReadonlyArray<readonly string[]>): TProperties => {
  const properties: TProperties = { ...schema.properties };
  for (const name of new Set(paths.map((path) => path[0]!))) {
    const property = properties[name];
    const inside = paths.filter((path) => path[0] === name).map((path) => path.slice(1));
    if (inside.some((path) => path.length === 0)) {
      if (property === undefined) throw new Error(`${String(schema.title ?? 'schema')} has no field ${name}`);
      delete properties[name];
    } else if (property !== undefined && KindGuard.IsObject(property)) {
      properties[name] = objectWithout(property, inside);
    } else if (property !== undefined && KindGuard.IsUnion(property) && property.anyOf.every(KindGuard.IsObject)) {
      properties[name] = Type.Union(
        property.anyOf.map((member) => objectWithout(member, inside)),
        unionOptionsOf(property),
      );
    } else throw new Error(`${String(schema.title ?? 'schema')} has no object ${name}`);
  }
  return properties;
};

/**
 * The message as it goes out on its topic: the opened payload of `personalType` (a key of
 * `PERSONAL_FIELDS`) without its personal fields, plus `sealed`, as `PersonalData.seal` makes it
 * (shared/adapters/crypto/personal-data.ts).
 */
export const sealedMessage = (
  personalType: string,
  opened: TObject,
  options: { $id: string; title: string; description: (personalFields: string) => string },
): TObject => {
  const fields = (PERSONAL_FIELDS[personalType] ?? []).map((field) => [...field.parents, field.name]);
  if (fields.length === 0) throw new Error(`${personalType} has no personal fields to seal`);
  const listed = fields.map((path) => path.join('.')).join(', ');
  return Type.Object(
    {
      ...withoutFields(opened, fields),
      [SEALED_FIELD]: Type.Optional(
        Type.String({
          pattern: `^${SEALED_VERSION.replaceAll('.', '\\.')}[A-Za-z0-9+/]+={0,2}$`,
          description:
            `The personal fields of this message (${listed}), encrypted: "${SEALED_VERSION}" then the base64 of a ` +
            '12-byte nonce, the 16-byte AES-256-GCM tag and the ciphertext of a JSON object holding those fields ' +
            "by their dotted path, under the call's own data key with the call id as associated data. Only the " +
            'service holds the key: read the fields through GET /api/calls/{callId}, which answers 404 once the ' +
            'call is erased; its key is destroyed then, and no copy of the fields can be read any more. Absent ' +
            'when the call was erased before the message was written: its personal fields are gone.',
        }),
      ),
    },
    { ...optionsOf(opened), ...options, description: options.description(listed) },
  );
};
