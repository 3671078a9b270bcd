/**
 * JSON bodies are UTF-8 (RFC 8259): a body whose bytes are not UTF-8 is a 400 naming the first
 * such byte, and a Content-Type naming another charset a 415 before the body is read. Read
 * leniently, a stray byte became U+FFFD and the call was stored with a character its sender never
 * wrote (a Latin-1 "José" was stored as "Jos\uFFFD").
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { charsetOf, firstNonUtf8Byte } from '../../../services/ingress/json-body.ts';
import { type EmbeddedIngress, openEmbeddedIngress } from '../../support/embedded-ingress.ts';
import type { Harness } from '../../support/ingress-harness.ts';

interface Problem {
  code: string;
  detail: string;
  errors?: { field: string; message: string }[];
}

test('firstNonUtf8Byte: the offset of the first byte that is not part of a UTF-8 character', () => {
  const at = (...parts: (string | number[])[]) =>
    firstNonUtf8Byte(Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : Buffer.from(p)))));
  assert.equal(at('{"a":"José"}'), -1);
  assert.equal(at('{"a":"Jos', [0xe9], '"}'), 9, 'a Latin-1 é');
  assert.equal(at('{"a":"\uFFFD ok ', [0xff], '"}'), 13, 'a real U+FFFD before it is three bytes');
  assert.equal(at('ab', [0xed, 0xa0, 0x80]), 2, 'a CESU-8 surrogate');
  assert.equal(at([0xc0, 0x80]), 0, 'an overlong NUL');
  assert.equal(at('x', [0xe2, 0x82]), 1, 'a character cut at the end');
});

test('charsetOf reads the parameter, quoted or not, in any case', () => {
  assert.equal(charsetOf('application/json'), undefined);
  assert.equal(charsetOf('application/json; charset=UTF-8'), 'utf-8');
  assert.equal(charsetOf('application/json;Charset="iso-8859-1"'), 'iso-8859-1');
  assert.equal(charsetOf('application/json; boundary=x; charset = utf8 '), 'utf8');
});

describe('ingest: UTF-8 bodies only', () => {
  let embedded: EmbeddedIngress;
  let h: Harness;

  before(async () => {
    embedded = await openEmbeddedIngress();
    h = embedded.h;
  });
  after(() => embedded.close());

  const post = (key: string, payload: Buffer | string, contentType = 'application/json') =>
    h.ingress.app.inject({
      method: 'POST',
      url: '/api/integrations/push-api/ingest',
      headers: { 'content-type': contentType, 'x-api-key': key },
      payload,
    });

  test('a body with a byte that is not UTF-8 is 400 MALFORMED_JSON naming its offset; nothing is accepted', async () => {
    const { key } = await h.team();
    const latin1 = Buffer.from('{"transcript":"Rep: hola\\nJosé: hola","repName":"José"}', 'latin1');
    const answer = await post(key, latin1);
    assert.equal(answer.statusCode, 400, answer.body);
    const problem = answer.json<Problem>();
    assert.equal(problem.code, 'MALFORMED_JSON');
    assert.deepEqual(problem.errors, [
      { field: 'body', message: 'is not UTF-8: the byte at offset 29 is not part of a UTF-8 character' },
    ]);
  });

  test('UTF-8 with or without charset=utf-8, and after a byte order mark, is accepted as sent', async () => {
    const { key } = await h.team();
    const body = '{"transcript":"Rep: hola\\nJosé: hola \uFFFD","repName":"José 😀"}';
    for (const [payload, type] of [
      [body, 'application/json'],
      [body, 'application/json; charset=UTF-8'],
      [body, 'application/json; charset="utf8"'],
      [Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(body)]), 'application/json'],
    ] as const) {
      const answer = await post(key, payload, type);
      assert.equal(answer.statusCode, 201, `${type}: ${answer.body}`);
    }
  });

  test('a Content-Type naming another charset is 415 naming Content-Type', async () => {
    const { key } = await h.team();
    const answer = await post(key, '{"transcript":"Rep: hi\\nDana: ok"}', 'application/json; charset=iso-8859-1');
    assert.equal(answer.statusCode, 415, answer.body);
    const problem = answer.json<Problem>();
    assert.equal(problem.code, 'UNSUPPORTED_MEDIA_TYPE');
    assert.deepEqual(problem.errors, [
      { field: 'Content-Type', message: 'charset must be utf-8: JSON bodies are UTF-8' },
    ]);
  });
});
