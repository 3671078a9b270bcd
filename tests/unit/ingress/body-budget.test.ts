import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createBodyBudget } from '../../../services/ingress/body-budget.ts';

const MB = 1024 * 1024;
const turn = () => new Promise((resolve) => setImmediate(resolve));

test('bodies are admitted while they fit; a large one waits in order, a small one that fits passes it', async () => {
  const budget = createBodyBudget(20 * MB, 60_000);
  assert.equal(await budget.acquire(8 * MB, 'team:a'), true);
  assert.equal(await budget.acquire(10 * MB, 'team:b'), true);
  const admitted: string[] = [];
  const large = budget.acquire(6 * MB, 'team:c').then((ok) => admitted.push(`6 MB ${ok}`));
  // Fits beside the first two, but waits behind the 6 MB one: a large body is not overtaken.
  const behind = budget.acquire(2 * MB, 'team:d').then((ok) => admitted.push(`2 MB ${ok}`));
  // A small body that fits goes at once.
  assert.equal(await budget.acquire(1024, 'team:e'), true);
  await turn();
  assert.deepEqual(admitted, []);
  assert.equal(budget.waiting, 2);
  budget.release(8 * MB, 'team:a');
  await Promise.all([large, behind]);
  assert.deepEqual(admitted, ['6 MB true', '2 MB true']);
  assert.equal(budget.inUse, 18 * MB + 1024);
});

test("one team holds at most half the budget: its next body waits without holding up another team's", async () => {
  const budget = createBodyBudget(20 * MB, 60_000);
  assert.equal(await budget.acquire(9 * MB, 'team:slow'), true);
  let second = false;
  const more = budget.acquire(2 * MB, 'team:slow').then((ok) => (second = ok));
  assert.equal(await budget.acquire(10 * MB, 'team:other'), true);
  await turn();
  assert.equal(second, false);
  budget.release(9 * MB, 'team:slow');
  await more;
  assert.equal(second, true);
});

test('a body that finds no room within the wait is refused, and the ones behind it go on', async () => {
  const budget = createBodyBudget(10 * MB, 50);
  assert.equal(await budget.acquire(5 * MB, 'team:a'), true);
  assert.equal(await budget.acquire(4 * MB, 'team:b'), true);
  const refused = budget.acquire(5 * MB, 'team:c');
  const behind = budget.acquire(1 * MB, 'team:d');
  assert.equal(await refused, false);
  assert.equal(await behind, true);
  assert.equal(budget.inUse, 10 * MB);
  assert.equal(budget.waiting, 0);
});

test("a body its owner's share cannot take does not hold up another owner's", async () => {
  const budget = createBodyBudget(32 * MB, 300);
  assert.equal(await budget.acquire(16 * MB, 'team:a'), true);
  assert.equal(await budget.acquire(7 * MB, 'team:c'), true);
  void budget.acquire(10 * MB, 'team:a'); // over a's share, and over what is left
  let admitted = false;
  void budget.acquire(2 * MB, 'team:b').then((ok) => (admitted = ok));
  await turn();
  assert.equal(admitted, true);
});

test('small bodies pass a waiting large one only until it has waited half its wait; then room is kept for it', async () => {
  const budget = createBodyBudget(10 * MB, 200);
  assert.equal(await budget.acquire(4 * MB, 'team:a'), true);
  assert.equal(await budget.acquire(4 * MB, 'team:b'), true);
  const order: string[] = [];
  const large = budget.acquire(3 * MB, 'team:c').then((ok) => order.push(`large ${ok}`));
  assert.equal(await budget.acquire(1024, 'team:d'), true, 'a small one passes at first');
  await new Promise((resolve) => setTimeout(resolve, 120));
  const small = budget.acquire(1024, 'team:e').then((ok) => order.push(`small ${ok}`));
  await turn();
  assert.deepEqual(order, [], 'past half its wait, the large one is not passed');
  budget.release(4 * MB, 'team:a');
  await Promise.all([large, small]);
  assert.deepEqual(order, ['large true', 'small true']);
});
