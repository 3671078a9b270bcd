import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createBodyBudget } from '../../../services/ingress/body-budget.ts';

test('bodies are admitted while they fit, the others wait in order and are admitted as room is given back', async () => {
  const budget = createBodyBudget(10, 60_000);
  assert.equal(await budget.acquire(6), true);
  const admitted: string[] = [];
  const large = budget.acquire(8).then((ok) => admitted.push(`large ${ok}`));
  // Fits beside the first, but waits behind the large one: it is not overtaken.
  const small = budget.acquire(2).then((ok) => admitted.push(`small ${ok}`));
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(admitted, []);
  assert.equal(budget.waiting, 2);
  budget.release(6);
  await Promise.all([large, small]);
  assert.deepEqual(admitted, ['large true', 'small true']);
  assert.equal(budget.inUse, 10);
});

test('a body that finds no room within the wait is refused, and the ones behind it go on', async () => {
  const budget = createBodyBudget(10, 50);
  assert.equal(await budget.acquire(9), true);
  const refused = budget.acquire(5);
  const behind = budget.acquire(1);
  assert.equal(await refused, false);
  assert.equal(await behind, true);
  assert.equal(budget.inUse, 10);
  assert.equal(budget.waiting, 0);
});
