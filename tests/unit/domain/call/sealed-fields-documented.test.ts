/**
 * The README tells downstream consumers which fields of each message travel sealed
 * (docs/decisions/0014-erasure-crypto-shredding.md); its table must be the list the sealing follows.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { CLOUD_EVENT_TYPES, isCallEventType } from '../../../../shared/domain/call/call-event-types.ts';
import { PERSONAL_FIELDS } from '../../../../shared/domain/call/personal-fields.ts';

test("the README's table of sealed fields per ce_type is personal-fields.ts's list", async () => {
  const readme = await readFile(new URL('../../../../README.md', import.meta.url), 'utf8');
  const lines = readme.split('\n');
  const header = lines.findIndex((line) => line.startsWith('| `ce_type` (on ') && line.includes('| Sealed fields |'));
  assert.ok(header >= 0, 'README has the table of sealed fields');
  const rows = lines.slice(header + 2, lines.indexOf('', header));
  const documented = Object.fromEntries(
    rows
      .map((row) => row.split('|').map((cell) => cell.trim()))
      .filter(([, type]) => type!.startsWith('`'))
      .map(([, type, fields]) => [type!.slice(1, -1), [...fields!.matchAll(/`([^`]+)`/g)].map((m) => m[1])]),
  );
  const sealed = Object.fromEntries(
    Object.entries(PERSONAL_FIELDS).map(([type, fields]) => [
      isCallEventType(type) ? CLOUD_EVENT_TYPES[type] : type,
      fields.map((field) => field.dotted),
    ]),
  );
  assert.deepEqual(documented, sealed);
});
