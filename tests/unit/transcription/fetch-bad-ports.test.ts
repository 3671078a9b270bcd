/** The ports the OpenAI-compatible adapters refuse at start are exactly those this runtime's fetch refuses. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FETCH_BAD_PORTS } from '../../../shared/adapters/openai-compatible.ts';

test("FETCH_BAD_PORTS is the runtime's own list: each port in it is refused, its neighbours outside it are not", async () => {
  const refused = async (port: number) => {
    try {
      await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(2000) });
      return false;
    } catch (error) {
      return /bad port/.test(String(((error as Error).cause as Error | undefined)?.message));
    }
  };
  const listed = [...FETCH_BAD_PORTS];
  const neighbours = [...new Set(listed.flatMap((p) => [p - 1, p + 1]))].filter(
    (p) => p > 0 && !FETCH_BAD_PORTS.has(p),
  );
  const [listedRefused, neighboursRefused] = await Promise.all([
    Promise.all(listed.map(refused)),
    Promise.all(neighbours.map(refused)),
  ]);
  assert.deepEqual(
    listed.filter((_, i) => !listedRefused[i]),
    [],
    'listed ports fetch does connect to',
  );
  assert.deepEqual(
    neighbours.filter((_, i) => neighboursRefused[i]),
    [],
    'ports fetch refuses that the list lacks',
  );
});
