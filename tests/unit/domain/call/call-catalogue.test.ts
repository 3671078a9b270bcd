/**
 * The call catalogue's stored shapes (docs/decisions/0016-event-catalogues-and-upcasting.md): what
 * a stored CallSubmitted may hold, and what the check refuses.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { callEvents } from '../../../../shared/domain/call/call-catalogue.ts';

const submitted = (metadata: Record<string, unknown>) => ({
  callId: 'c1',
  teamId: 't1',
  keyId: 'k1',
  submittedAt: '2026-11-20T10:00:00.000Z',
  submission: { aiTitleEnabled: true, tags: [], metadata },
  attributedTo: { kind: 'owner', email: 'o@acme.test', name: 'Olive' },
  capacity: { reservedMinutes: 1, autoRechargedMinutes: 0 },
  warnings: [],
});

describe('call catalogue: CallSubmitted metadata', () => {
  for (const key of ['plain', 'line\nfeed', 'carriage\rreturn', 'both\r\n', 'line\u2028separator', 'para\u2029sep']) {
    test(`a metadata key ${JSON.stringify(key)} is kept, and its value is checked like any other key's`, () => {
      const kept = callEvents.parse('CallSubmitted', submitted({ [key]: 'v', n: 1 }));
      assert.ok(kept.ok, JSON.stringify(kept));
      assert.deepEqual(kept.event.data.submission.metadata, { [key]: 'v', n: 1 });
      const nested = callEvents.parse('CallSubmitted', submitted({ [key]: { crm: 'x' } }));
      assert.equal(nested.ok, false, 'metadata is flat: an object under any key does not decode');
      assert.ok(!nested.ok && nested.field.startsWith('/submission/metadata/'), JSON.stringify(nested));
    });
  }
});
