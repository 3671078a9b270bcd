/**
 * The processor's sweep wakes an open call no actor works only once two sweeps in a row found it
 * so (services/processor/open-calls.ts, UnworkedCalls): the open-call tracker follows the feed, so
 * a call whose actor has just closed it still looks open for a moment, and waking it then only
 * reloaded a finished call and logged a warning about it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { UnworkedCalls } from '../../../services/processor/open-calls.ts';

test('a call is confirmed unworked at the second sweep in a row that finds it so, and no sooner', () => {
  const unworked = new UnworkedCalls();
  assert.deepEqual([...unworked.confirm(['a', 'b'])], [], 'first seen: only noted');
  // b was closed (or taken by an actor) meanwhile; c is new.
  assert.deepEqual([...unworked.confirm(['a', 'c'])], ['a']);
  assert.deepEqual([...unworked.confirm(['a', 'c'])], ['a', 'c']);
  // Gone for one sweep, then back: noted again before it is woken.
  assert.deepEqual([...unworked.confirm(['c'])], ['c']);
  assert.deepEqual([...unworked.confirm(['a', 'c'])], ['c']);
  assert.deepEqual([...unworked.confirm([])], []);
});
