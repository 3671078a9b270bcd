/**
 * The JSON Schemas served for downstream systems
 * (docs/decisions/0024-every-published-message-has-a-schema.md), checked without a pipeline: every
 * type a topic carries, and every webhook type, has its documents; they are valid 2020-12 schemas
 * a strict validator takes together; the topic form holds no personal field; and the README lists
 * exactly what is served. tests/contract/event-schemas.test.ts checks them against real messages.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describe, test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import { callEvents } from '../../../../shared/domain/call/call-catalogue.ts';
import { CLOUD_EVENT_TYPES } from '../../../../shared/domain/call/call-event-types.ts';
import type { CallEventType } from '../../../../shared/domain/call/call-events.ts';
import { EVENT_SCHEMA_LIST, EVENT_SCHEMAS } from '../../../../shared/domain/call/event-schemas.ts';
import { PERSONAL_FIELDS } from '../../../../shared/domain/call/personal-fields.ts';
import { TOPIC_MESSAGES } from '../../../../shared/domain/call/topic-messages.ts';
import type { JsonSchemaDocument } from '../../../../shared/domain/json-schema-document.ts';
import { schemaIndex } from '../../../../shared/domain/schema-index.ts';
import { WEBHOOK_SCHEMAS } from '../../../../shared/domain/webhook/webhook-bodies.ts';
import { WEBHOOK_EVENT_TYPES } from '../../../../shared/domain/webhook/webhook-events.ts';
import type { Json } from '../../../../shared/ports/event-store.ts';
import { TOPICS, topicNames } from '../../../../shared/topics.ts';

type Node = { [key: string]: Json };
const isNode = (value: Json | undefined): value is Node =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** Whether the document has the field at `path`, in any member of a union on the way. */
const hasField = (schema: Json | undefined, path: readonly string[]): boolean => {
  if (!isNode(schema)) return false;
  if (Array.isArray(schema.anyOf)) return schema.anyOf.some((member) => hasField(member, path));
  if (path.length === 0) return true;
  return isNode(schema.properties) && hasField(schema.properties[path[0]!], path.slice(1));
};

const personalTypeOf = (ceType: string) =>
  (Object.keys(CLOUD_EVENT_TYPES) as CallEventType[]).find((type) => CLOUD_EVENT_TYPES[type] === ceType) ?? ceType;

describe('served JSON Schemas', () => {
  test('every type a topic carries has its document as on the topic, and its opened one when it has personal fields', () => {
    for (const [topic, published] of Object.entries(TOPIC_MESSAGES)) {
      for (const ceType of published.ceTypes) {
        const forms = EVENT_SCHEMA_LIST.filter((schema) => schema.ceType === ceType);
        const personal = (PERSONAL_FIELDS[personalTypeOf(ceType)] ?? []).length > 0;
        assert.deepEqual(
          forms.map((schema) => `${schema.name} ${schema.form}`),
          personal ? [`${ceType} topic`, `${ceType}.opened opened`] : [`${ceType} topic`],
          `${ceType} on ${topic}`,
        );
        for (const schema of forms) assert.ok(schema.topics.includes(topic as keyof typeof TOPIC_MESSAGES));
      }
    }
    assert.deepEqual(
      Object.keys(WEBHOOK_SCHEMAS).sort(),
      [...WEBHOOK_EVENT_TYPES, 'webhook.test'].sort(),
      'every webhook type has its body',
    );
  });

  test('the documents are valid JSON Schema 2020-12 that a strict validator takes together: one $id each', () => {
    const ajv = new Ajv2020({ strict: true, allErrors: true });
    ajvFormats.default(ajv);
    for (const [name, document] of [
      ...Object.entries(EVENT_SCHEMAS),
      ...Object.entries(WEBHOOK_SCHEMAS).map(([type, document]): [string, JsonSchemaDocument] => [
        `webhook ${type}`,
        document,
      ]),
    ]) {
      assert.equal(document.$schema, 'https://json-schema.org/draft/2020-12/schema', name);
      assert.doesNotThrow(() => ajv.addSchema(document), name);
      assert.equal(typeof document.$id, 'string', name);
      assert.ok(ajv.getSchema(document.$id as string), name);
    }
  });

  test("a call event's documents are the catalogue's shape of it: the opened one has every field the catalogue's has", () => {
    for (const [type, ceType] of Object.entries(CLOUD_EVENT_TYPES) as Array<[CallEventType, string]>) {
      const shape = callEvents.shapeOf(type).everyVersion as unknown as { properties: Record<string, unknown> };
      const opened = EVENT_SCHEMAS[`${ceType}.opened`] ?? EVENT_SCHEMAS[ceType]!;
      assert.deepEqual(Object.keys(opened.properties as Node), Object.keys(shape.properties), ceType);
    }
  });

  test('the document as on the topic has no personal field, declares sealed and lists the fields in the index; the opened one has them all', () => {
    for (const schema of EVENT_SCHEMA_LIST.filter((s) => s.form === 'topic' && s.sealedFields.length > 0)) {
      const opened = EVENT_SCHEMAS[`${schema.name}.opened`];
      assert.ok(isNode(schema.document.properties) && isNode(schema.document.properties.sealed), schema.name);
      for (const field of schema.sealedFields) {
        const path = field.split('.');
        assert.ok(!hasField(schema.document, path), `${schema.name} has ${field}`);
        assert.ok(hasField(opened, path), `${schema.name}.opened lacks ${field}`);
      }
      assert.deepEqual(
        schema.sealedFields,
        PERSONAL_FIELDS[personalTypeOf(schema.ceType)]!.map((f) => f.dotted),
      );
    }
    // Every object is closed: what a document does not name is not published.
    const open = (node: Json | undefined, path: string): string[] => {
      if (Array.isArray(node)) return node.flatMap((item, i) => open(item, `${path}/${i}`));
      if (!isNode(node)) return [];
      const here = node.type === 'object' && node.properties && node.additionalProperties !== false ? [path] : [];
      return [...here, ...Object.entries(node).flatMap(([key, value]) => open(value, `${path}/${key}`))];
    };
    assert.deepEqual(
      Object.entries({ ...EVENT_SCHEMAS, ...WEBHOOK_SCHEMAS }).flatMap(([name, document]) => open(document, name)),
      [],
    );
  });

  test('the index names the topics as the deployment does, and points every topic type to its documents', () => {
    const prefixed = topicNames('acme.');
    const index = schemaIndex(prefixed);
    assert.deepEqual(
      index.topics.map((t) => t.topic),
      Object.values(prefixed),
    );
    assert.deepEqual(
      index.schemas.map((s) => s.url).sort(),
      [
        ...Object.keys(EVENT_SCHEMAS).map((name) => `/docs/events/${name}.json`),
        ...Object.keys(WEBHOOK_SCHEMAS).map((type) => `/docs/webhooks/${type}.json`),
      ].sort(),
    );
    const submitted = index.schemas.find((s) => s.name === 'call.submitted');
    assert.deepEqual(submitted && 'topics' in submitted ? submitted.topics : [], [
      'acme.calls.submitted.v1',
      'acme.calls.events.v1',
    ]);
    assert.deepEqual(index.topics.find((t) => t.topic === prefixed.deadLetter)?.messages, []);
  });

  test("the README's tables of schemas list every served document, with its topics", async () => {
    const readme = await readFile(new URL('../../../../README.md', import.meta.url), 'utf8');
    const rowsAfter = (heading: string) => {
      const lines = readme.split('\n');
      const start = lines.findIndex((line) => line.startsWith(heading));
      assert.ok(start >= 0, `README has a table starting ${heading}`);
      const end = lines.indexOf('', start);
      return lines.slice(start + 2, end).map((row) =>
        row
          .split('|')
          .slice(1, -1)
          .map((cell) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!)),
      );
    };
    const index = schemaIndex(TOPICS);
    const topicsOf = (ceType: string) =>
      index.topics.filter((t) => t.messages.some((m) => m.ceType === ceType)).map((t) => t.topic);
    assert.deepEqual(
      rowsAfter('| `ce_type` | Topics | On the topic |'),
      index.topics
        .flatMap((t) => t.messages)
        .filter((m, i, all) => all.findIndex((other) => other.ceType === m.ceType) === i)
        .map((m) => [[m.ceType], topicsOf(m.ceType), [m.schema], m.opened ? [m.opened] : []]),
    );
    assert.deepEqual(
      rowsAfter('| Webhook `type` |'),
      Object.keys(WEBHOOK_SCHEMAS).map((type) => [[type], [`/docs/webhooks/${type}.json`]]),
    );
  });
});
