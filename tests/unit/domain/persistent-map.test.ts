import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PersistentMap } from '../../../shared/domain/persistent-map.ts';

test('set, get, has, delete and size, like a Map', () => {
  const reference = new Map<string, number>();
  let map = PersistentMap.empty<number>();
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  for (let i = 0; i < 20_000; i++) {
    const key = `call-${Math.floor(random() * 3000)}`;
    if (random() < 0.6) {
      map = map.set(key, i);
      reference.set(key, i);
    } else {
      map = map.delete(key);
      reference.delete(key);
    }
  }
  assert.equal(map.size, reference.size);
  for (const [key, value] of reference) assert.equal(map.get(key), value);
  assert.equal(map.has('call-absent'), false);
  assert.deepEqual(new Map(map.entries()), reference);
});

test('updates leave the old map unchanged (values, not references)', () => {
  const a = PersistentMap.of([['x', 1]]);
  const b = a.set('y', 2).set('x', 3);
  const c = b.delete('x');
  assert.deepEqual([a.get('x'), a.has('y'), a.size], [1, false, 1]);
  assert.deepEqual([b.get('x'), b.get('y'), b.size], [3, 2, 2]);
  assert.deepEqual([c.has('x'), c.get('y'), c.size], [false, 2, 1]);
  assert.equal(c.delete('absent'), c);
});

test('keys such as __proto__ and toString are plain keys', () => {
  const map = PersistentMap.of([
    ['__proto__', 1],
    ['toString', 2],
  ]);
  assert.deepEqual([map.get('__proto__'), map.get('toString'), map.get('constructor')], [1, 2, undefined]);
});
