/**
 * A scrape does not wait for a gauge source whose backend stops answering: past
 * GAUGE_SOURCE_DEADLINE_MS its series are left out and everything else is rendered, and the next
 * scrape waits for the same read instead of starting another. (A database that stopped answering
 * held /metrics for its whole statement timeout, 30 s, longer than a scraper waits.)
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openCallsGauge, registry } from '../../../shared/observability/metrics.ts';

test(
  'a gauge source that never answers leaves its series out of the scrape, within the deadline',
  { timeout: 20_000 },
  async () => {
    let reads = 0;
    let answer!: (samples: Array<{ labels: Record<string, string>; value: number }>) => void;
    // The first read hangs until answered; later reads answer at once.
    const hung = openCallsGauge.register(() => {
      reads++;
      return reads === 1 ? new Promise((resolve) => (answer = resolve)) : [{ labels: { group: 'late' }, value: 3 }];
    });
    const answering = openCallsGauge.register(() => [{ labels: { group: 'answering' }, value: 7 }]);
    try {
      // Resolves at all (without the deadline it waited for ever; the test's timeout is 10× it).
      const text = await registry.metrics();
      assert.match(text, /^pipeline_open_calls\{group="answering"\} 7$/m);
      assert.match(text, /^process_cpu_user_seconds_total /m, 'the process metrics are rendered');

      await registry.metrics();
      assert.equal(reads, 1, 'the second scrape waited for the read under way');
      answer([]);
      await new Promise((resolve) => setImmediate(resolve));
      assert.match(
        await registry.metrics(),
        /^pipeline_open_calls\{group="late"\} 3$/m,
        'once it answers, it is read again',
      );
      assert.equal(reads, 2);
    } finally {
      hung();
      answering();
    }
  },
);
