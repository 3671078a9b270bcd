import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  PoisonRecordError,
  resilientHandler,
  STUCK_RECORD_AFTER,
  type StuckRecordBounds,
} from '../../../shared/adapters/event-log/resilient-handler.ts';
import {
  EventLogUnavailableError,
  type LogRecord,
  type OutgoingRecord,
  RecordRefusedError,
} from '../../../shared/ports/event-log.ts';
import { EventStoreUnavailableError } from '../../../shared/ports/event-store.ts';
import { DataAtFaultError } from '../../../shared/ports/data-at-fault.ts';
import { eventually } from '../../support/eventually.ts';

const record = (offset: number): LogRecord => ({
  topic: 'calls.submitted.v1',
  partition: 2,
  offset: BigInt(offset),
  key: `call-${offset}`,
  value: '{"x":1}',
  headers: { ce_type: 'CallSubmitted' },
  timestamp: new Date(),
});

const setup = (
  handle: (r: LogRecord) => Promise<void>,
  publish: (topic: string, records: OutgoingRecord[]) => Promise<void> = async () => {},
  stuckAfter?: Partial<StuckRecordBounds>,
) => {
  const lines: { level: string; message: string }[] = [];
  const published: { topic: string; records: OutgoingRecord[] }[] = [];
  const controller = new AbortController();
  const log = {
    info: (_f: object, message: string) => lines.push({ level: 'info', message }),
    warn: (_f: object, message: string) => lines.push({ level: 'warn', message }),
    error: (_f: object, message: string) => lines.push({ level: 'error', message }),
  };
  const resilient = resilientHandler(handle, {
    deadLetter: {
      eventLog: {
        publish: async (topic, records) => {
          await publish(topic, records);
          published.push({ topic, records });
          return [];
        },
      },
      topic: 'calls.dead-letter.v1',
    },
    log,
    signal: controller.signal,
    backoff: { baseMs: 1, maxMs: 5 },
    stuckAfter,
  });
  return { resilient, lines, published, controller };
};

describe('resilient record handler', () => {
  test('an outage is retried in place until it passes, logged once when it starts and once when it ends; nothing is dead-lettered', async () => {
    let calls = 0;
    const { resilient, lines, published } = setup(async () => {
      if (++calls <= 4) throw new EventStoreUnavailableError('database down');
    });
    await resilient.handler(record(7));
    assert.equal(calls, 5);
    assert.deepEqual(published, []);
    assert.deepEqual(
      lines.map((l) => l.level),
      ['warn', 'info'],
    );
    assert.equal(resilient.retrying().count, 0);
  });

  test('a record that can never be handled goes to the dead-letter topic with its reason and origin, and the handler returns', async () => {
    const { resilient, published, lines } = setup(async () => {
      throw new PoisonRecordError('invalid CallSubmitted: /callId must be string');
    });
    await resilient.handler(record(9));
    assert.equal(published.length, 1);
    const [dead] = published[0]!.records;
    assert.equal(published[0]!.topic, 'calls.dead-letter.v1');
    assert.equal(dead!.key, 'call-9');
    assert.equal(dead!.value, '{"x":1}');
    assert.equal(dead!.headers!.ce_type, 'CallSubmitted');
    assert.match(dead!.headers!.dlq_reason!, /invalid CallSubmitted/);
    assert.equal(dead!.headers!.dlq_source_offset, '9');
    assert.equal(dead!.headers!.dlq_source_partition, '2');
    assert.equal(resilient.deadLettered, 1);
    assert.deepEqual(
      lines.map((l) => l.level),
      ['error'],
    );
  });

  test("values the database refuses for what they are (DataAtFaultError: a data exception, a constraint) are the record's: dead-lettered", async () => {
    const { resilient, published } = setup(async () => {
      throw new DataAtFaultError('PostgreSQL refused the data: unsupported Unicode escape sequence');
    });
    await resilient.handler(record(11));
    assert.equal(published.length, 1);
    assert.match(published[0]!.records[0]!.headers!.dlq_reason!, /unsupported Unicode escape sequence/);
  });

  test('a failure that proves nothing against the record (the database refusing connections, unclassified; a bug) is retried in place, never dead-lettered, and reported while it lasts', async () => {
    // What an adapter without a translation would let through: PostgreSQL refusing new sessions.
    const refused = Object.assign(new Error('database "calls" is not currently accepting connections'), {
      code: '55000',
      severity: 'FATAL',
    });
    let failing = true;
    let calls = 0;
    const { resilient, published, lines } = setup(async () => {
      calls++;
      if (failing) throw refused;
    });
    const running = resilient.handler(record(1));
    await eventually(() => assert.ok(calls >= 3, `attempts so far: ${calls}`), { timeoutMs: 2000, intervalMs: 5 });
    const meanwhile = resilient.retrying();
    assert.equal(meanwhile.count, 1);
    assert.ok(meanwhile.since instanceof Date);
    assert.match(meanwhile.lastError!, /not currently accepting connections/);
    failing = false;
    await running;
    assert.deepEqual(published, [], 'nothing dead-lettered');
    assert.equal(resilient.deadLettered, 0);
    assert.equal(resilient.retrying().count, 0);
    assert.deepEqual(
      lines.map((l) => `${l.level}: ${l.message}`),
      [
        'error: record failed with an error that does not prove it bad; retrying in place until it succeeds',
        'info: record handled after retrying',
      ],
    );

    const bug = setup(async () => {
      throw new TypeError('Cannot read properties of undefined');
    });
    const stuck = bug.resilient.handler(record(2));
    await eventually(() => assert.equal(bug.resilient.retrying().count, 1), { timeoutMs: 2000, intervalMs: 5 });
    assert.deepEqual(bug.published, []);
    bug.controller.abort(new Error('stopping'));
    await assert.rejects(stuck);
  });

  test(
    'a record that keeps failing with a bug while other records are handled is set aside in the dead-letter topic, saying so',
    { timeout: 10_000 },
    async (t) => {
      const bug = new TypeError("Cannot read properties of undefined (reading 'minutes')");
      let attempts = 0;
      const { resilient, published, lines, controller } = setup(
        async (r) => {
          if (r.offset !== 4n) return;
          attempts++;
          throw bug;
        },
        undefined,
        { attempts: 3, ms: 30 },
      );
      // Ends the retrying should the record never be set aside (the test times out).
      t.signal.addEventListener('abort', () => controller.abort(t.signal.reason));
      const stuck = resilient.handler(record(4));
      await eventually(() => assert.ok(attempts >= 5, `${attempts} attempts`), { timeoutMs: 2000, intervalMs: 5 });
      assert.equal(published.length, 0, 'not while no other record is handled: the bug may be every record’s');
      assert.equal(resilient.retrying().count, 1);

      await resilient.handler(record(5));
      await stuck;
      assert.equal(published.length, 1);
      const [dead] = published[0]!.records;
      assert.equal(dead!.key, 'call-4');
      assert.equal(dead!.headers!.dlq_source_offset, '4');
      assert.match(
        dead!.headers!.dlq_reason!,
        /^failed \d+ times in a row over \d+ s with an error that does not prove it bad, while other records were handled: set aside; redrive it once the cause is fixed\. Last error: TypeError: Cannot read properties of undefined \(reading 'minutes'\)$/,
      );
      assert.equal(resilient.deadLettered, 1);
      assert.equal(resilient.retrying().count, 0);
      assert.deepEqual(
        lines.map((l) => `${l.level}: ${l.message}`),
        [
          'error: record failed with an error that does not prove it bad; retrying in place until it succeeds',
          'error: record keeps failing with an error that does not prove it bad while other records are handled; set aside in the dead-letter topic for a redrive',
        ],
      );
    },
  );

  test(
    'a record is set aside only after both the attempts and the time, counted again after an outage between its failures',
    { timeout: 10_000 },
    async (t) => {
      const failures: { error: Error; at: number }[] = [];
      const script = [new TypeError('bug'), new TypeError('bug'), new EventStoreUnavailableError('database down')];
      const { resilient, published, controller } = setup(
        async (r) => {
          if (r.offset !== 6n) return;
          const error = script[failures.length] ?? new TypeError('bug');
          failures.push({ error, at: Date.now() });
          throw error;
        },
        undefined,
        { attempts: 3, ms: 100 },
      );
      t.signal.addEventListener('abort', () => controller.abort(t.signal.reason));
      await resilient.handler(record(1)); // handled before its first failure: no evidence
      const stuck = resilient.handler(record(6));
      await eventually(() => assert.ok(failures.length >= 4), { timeoutMs: 2000, intervalMs: 1 });
      await resilient.handler(record(7));
      await stuck;
      const setAsideAt = Date.now();
      assert.equal(published.length, 1);
      const counted = failures.slice(3);
      assert.ok(counted.length >= 3, `${counted.length} failures in a row after the outage`);
      assert.ok(setAsideAt - counted[0]!.at >= 100, `set aside ${setAsideAt - counted[0]!.at} ms after the first`);
      assert.match(published[0]!.records[0]!.headers!.dlq_reason!, /Last error: TypeError: bug$/);
    },
  );

  test(
    'a record that keeps failing with a bug while no other record is handled is set aside only after the longer bound, saying so',
    { timeout: 10_000 },
    async (t) => {
      const failures: number[] = [];
      const { resilient, published, controller } = setup(
        async (r) => {
          if (r.offset !== 11n) return;
          failures.push(Date.now());
          throw new TypeError('bug');
        },
        undefined,
        { attempts: 3, ms: 30, aloneMs: 400 },
      );
      t.signal.addEventListener('abort', () => controller.abort(t.signal.reason));
      const stuck = resilient.handler(record(11));
      await eventually(() => assert.ok(Date.now() - failures[0]! >= 200 && failures.length >= 3), {
        timeoutMs: 2000,
        intervalMs: 5,
      });
      assert.equal(published.length, 0, 'not after `ms` while no other record is handled');
      await stuck;
      assert.ok(Date.now() - failures[0]! >= 400, 'set aside before `aloneMs`');
      assert.equal(published.length, 1);
      assert.match(
        published[0]!.records[0]!.headers!.dlq_reason!,
        /^failed \d+ times in a row over \d+ s with an error that does not prove it bad, while no other record was handled: set aside; redrive it once the cause is fixed\. Last error: TypeError: bug$/,
      );
    },
  );

  test("the service's bounds are decision 0027's: 10 attempts, over a minute while others are handled, ten minutes while none is", () => {
    assert.deepEqual(STUCK_RECORD_AFTER, { attempts: 10, ms: 60_000, aloneMs: 600_000 });
  });

  test('an outage, however long, is never set aside, whatever else is handled', async () => {
    let attempts = 0;
    const { resilient, published, controller } = setup(
      async (r) => {
        if (r.offset !== 8n) return;
        attempts++;
        throw new EventStoreUnavailableError('database down');
      },
      undefined,
      { attempts: 2, ms: 1 },
    );
    const running = resilient.handler(record(8));
    await resilient.handler(record(9));
    await eventually(() => assert.ok(attempts >= 10, `${attempts} attempts`), { timeoutMs: 3000, intervalMs: 5 });
    await resilient.handler(record(10));
    await new Promise((resolve) => setTimeout(resolve, 30));
    assert.deepEqual(published, []);
    controller.abort(new Error('stopping'));
    await assert.rejects(running);
  });

  test('a dead-letter topic that is unreachable is retried too: the record is never dropped', async () => {
    let attempts = 0;
    const { resilient, published } = setup(
      async () => {
        throw new PoisonRecordError('bad');
      },
      async () => {
        if (++attempts <= 2) throw new EventLogUnavailableError('broker down');
      },
    );
    await resilient.handler(record(3));
    assert.equal(attempts, 3);
    assert.equal(published.length, 1);
  });

  test("a dead letter the dead-letter topic refuses (its limit below the record's) is retried in place, named in readiness, until the topic takes it: the handler never throws", async () => {
    let refusing = true;
    let attempts = 0;
    const { resilient, published, lines } = setup(
      async () => {
        throw new PoisonRecordError('bad');
      },
      async () => {
        attempts++;
        if (refusing) throw new RecordRefusedError('MESSAGE_TOO_LARGE (test)');
      },
    );
    const running = resilient.handler(record(4));
    await eventually(() => {
      assert.ok(attempts >= 3, 'tried again and again');
      assert.equal(resilient.retrying().count, 1);
      assert.match(
        String(resilient.retrying().lastError),
        /dead-letter topic calls\.dead-letter\.v1 refuses the dead letter/,
      );
    });
    assert.equal(published.length, 0);
    refusing = false;
    await running;
    assert.equal(published.length, 1);
    assert.equal(resilient.retrying().count, 0);
    assert.equal(resilient.deadLettered, 1);
    assert.ok(lines.some((l) => l.level === 'info' && /handled after retrying/.test(l.message)));
  });

  test("the record's own signal (its partition given up) ends its retrying too: the handler throws and no longer reports it; the others go on", async () => {
    const { resilient, published } = setup(async (r) => {
      if (r.offset === 12n) throw new TypeError('bug');
    });
    const givenUp = new AbortController();
    const running = resilient.handler(record(12), givenUp.signal);
    await eventually(() => assert.equal(resilient.retrying().count, 1), { timeoutMs: 2000, intervalMs: 5 });
    givenUp.abort(new Error('partition given up'));
    await assert.rejects(running);
    assert.equal(resilient.retrying().count, 0);
    assert.deepEqual(published, []);
    await resilient.handler(record(13), new AbortController().signal);
  });

  test('stopping ends the retrying: the handler throws, so the record is not committed and is redelivered', async () => {
    const { resilient, controller } = setup(async () => {
      throw new EventStoreUnavailableError('database down');
    });
    const running = resilient.handler(record(5));
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(resilient.retrying().count, 1);
    assert.ok(resilient.retrying().since instanceof Date);
    controller.abort(new Error('stopping'));
    await assert.rejects(running);
    assert.equal(resilient.retrying().count, 0);
  });
});
