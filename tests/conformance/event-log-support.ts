/** Helpers of the event-log conformance suite. */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { TestContext } from 'node:test';
import type { Consumer, ConsumeOptions, EventLog, LogRecord, RecordPosition } from '../../shared/ports/event-log.ts';

export interface EventLogUnderTest {
  log: EventLog;
  /** Closes what the factory opened; default `log.close()`. */
  cleanup?: () => Promise<void>;
  /** Put in front of topic names (e.g. to keep a shared broker tidy). */
  topicPrefix?: string;
}

/**
 * Log instances for one test, closed (consumers first) when it ends; fresh topics of
 * `partitions` partitions and fresh group ids.
 */
export const openSession = async (t: TestContext, factory: () => Promise<EventLogUnderTest>, partitions: number) => {
  const opened: EventLogUnderTest[] = [];
  const consumers: Consumer[] = [];
  t.after(async () => {
    await Promise.allSettled(consumers.map((c) => c.stop()));
    for (const o of opened) await (o.cleanup ? o.cleanup() : o.log.close());
  });
  const open = async () => {
    const o = await factory();
    opened.push(o);
    return o.log;
  };
  const log = await open();
  const prefix = opened[0]!.topicPrefix ?? '';
  return {
    log,
    /** Another instance on the same storage, like a second process. */
    open,
    topic: async (count = partitions) => {
      const name = `${prefix}t-${randomUUID()}`;
      await log.ensureTopics([{ name, partitions: count }]);
      return name;
    },
    /** Starts a consumer that is stopped when the test ends. */
    consume: async (on: EventLog, options: ConsumeOptions) => {
      const consumer = await on.consume(options);
      consumers.push(consumer);
      return consumer;
    },
    group: () => `g-${randomUUID()}`,
  };
};

/** Polls `probe` until it holds; fails naming `what` after `timeoutMs`. */
export const eventually = async (
  probe: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs: number,
): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await probe()) return;
    if (Date.now() > deadline) assert.fail(`timed out after ${timeoutMs} ms waiting for: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
};

export interface Published {
  positions: RecordPosition[];
  /** Values per key in publish order. */
  byKey: Map<string, string[]>;
}

/** Publishes `count` records over `keys` keys (`k-0`…), ten per call, in order. */
export const published = async (
  log: EventLog,
  topic: string,
  count: number,
  keys: number,
  tag = 'first',
): Promise<Published> => {
  const records = Array.from({ length: count }, (_, i) => ({ key: `k-${i % keys}`, value: `${tag}-${i}` }));
  const positions: RecordPosition[] = [];
  for (let i = 0; i < records.length; i += 10) positions.push(...(await log.publish(topic, records.slice(i, i + 10))));
  const byKey = new Map<string, string[]>();
  for (const r of records) byKey.set(r.key, [...(byKey.get(r.key) ?? []), r.value]);
  return { positions, byKey };
};

const at = (p: { partition: number; offset: bigint }) => `${p.partition}/${p.offset}`;

/** What a handler saw, in the order it saw it. */
export const recorder = () => {
  const handled: LogRecord[] = [];
  const positions = new Set<string>();
  return {
    add(record: LogRecord) {
      handled.push(record);
      positions.add(at(record));
    },
    has: (position: { partition: number; offset: bigint }) => positions.has(at(position)),
    /** Distinct records handled. */
    count: () => positions.size,
    all: () => [...handled],
    /** Values of `key` in the order handled (a redelivery shows up twice). */
    valuesOf: (key: string) => handled.filter((r) => r.key === key).map((r) => r.value),
  };
};
