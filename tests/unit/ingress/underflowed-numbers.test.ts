import assert from 'node:assert/strict';
import { test } from 'node:test';
import { underflowedNumberPath } from '../../../services/ingress/json-body.ts';

test('a non-zero number literal that parses as 0 is found, with the path it was sent at', () => {
  assert.equal(underflowedNumberPath('{"dealSize":1e-400}'), 'dealSize');
  assert.equal(underflowedNumberPath('{"deal":{"deal_size":-1E-999}}'), 'deal.deal_size');
  assert.equal(underflowedNumberPath('{"metadata":{"x":[1,2,3e-330]}}'), 'metadata.x[2]');
  assert.equal(underflowedNumberPath(`{"tiny":0.${'0'.repeat(400)}1}`), 'tiny');
  assert.equal(underflowedNumberPath('1e-999'), 'body');
  // The first one in the body's order.
  assert.equal(underflowedNumberPath('{"a":{"b":1e-400},"c":1e-400}'), 'a.b');
});

test('zeros, subnormals and strings are not underflows', () => {
  for (const text of [
    '{"a":0}',
    '{"a":-0}',
    '{"a":0e-400}',
    '{"a":-0.000e-999}',
    '{"a":1e-320}', // subnormal, not 0
    '{"a":5e-324}', // the smallest double
    '{"a":1e-100}',
    '{"a":"1e-400"}',
    `{"a":0.${'0'.repeat(400)}}`,
  ])
    assert.equal(underflowedNumberPath(text), undefined, text);
});
