import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseAudioUrl } from '../../../shared/adapters/audio/audio-url.ts';
import { isStepError } from '../../../shared/ports/step-error.ts';

const invalid = (raw: string, base?: URL) => {
  try {
    parseAudioUrl(raw, base);
  } catch (error) {
    assert.ok(isStepError(error));
    assert.equal(error.code, 'audio_url_invalid');
    assert.equal(error.retriable, false);
    return error.message;
  }
  assert.fail(`${raw} was accepted`);
};

test('http and https URLs are accepted, without their fragment', () => {
  assert.equal(parseAudioUrl('https://cdn.example.com/a.mp3?sig=1#t=10').href, 'https://cdn.example.com/a.mp3?sig=1');
  assert.equal(parseAudioUrl('HTTP://Example.COM:8080/a.wav').href, 'http://example.com:8080/a.wav');
});

test('IP literals come out normalised, so the address check sees what the socket would use', () => {
  assert.equal(parseAudioUrl('http://0x7f.1/a').hostname, '127.0.0.1');
  assert.equal(parseAudioUrl('http://2130706433/a').hostname, '127.0.0.1');
  assert.equal(parseAudioUrl('http://[::ffff:127.0.0.1]/a').hostname, '[::ffff:7f00:1]');
});

test('audio_url_invalid names the scheme when it is not http(s)', () => {
  for (const raw of [
    'ftp://example.com/a.mp3',
    'file:///etc/passwd',
    'gopher://example.com/',
    'data:audio/wav;base64,AAAA',
    'javascript:alert(1)',
  ]) {
    assert.match(invalid(raw), /scheme; only http and https/, raw);
  }
  assert.match(invalid('ftp://example.com/a.mp3'), /"ftp"/);
});

test('audio_url_invalid when the URL carries credentials', () => {
  for (const raw of [
    'http://user:pass@example.com/a.mp3',
    'https://user@example.com/a.mp3',
    'http://:pass@example.com/',
  ]) {
    assert.match(invalid(raw), /user name or password/, raw);
  }
});

test('audio_url_invalid when it is not a URL at all', () => {
  for (const raw of ['', 'not a url', '/relative/path.mp3', 'http://', 'http://exa mple.com/']) {
    assert.match(invalid(raw), /not a valid URL/, raw);
  }
});

test('a redirect Location is resolved against the current URL and validated the same way', () => {
  const base = new URL('https://cdn.example.com/calls/1/audio');
  assert.equal(parseAudioUrl('../2/audio.mp3', base).href, 'https://cdn.example.com/calls/2/audio.mp3');
  assert.equal(parseAudioUrl('//other.example.net/x', base).href, 'https://other.example.net/x');
  assert.match(
    invalid('ftp://files.example.com/a.mp3', base),
    /^The audio URL redirected to a location that uses the "ftp" scheme/,
  );
  assert.match(
    invalid('http://u:p@example.com/', base),
    /redirected to a location that carries a user name or password/,
  );
  assert.match(invalid('http://[::1', base), /redirected to an invalid location/);
});

test('a redirect from https to http is audio_url_invalid; http to https, and http to http, are followed', () => {
  const secure = new URL('https://cdn.example.com/calls/1/audio');
  assert.equal(
    invalid('http://cdn.example.com/calls/1/audio', secure),
    'The audio URL redirected from https to http; a redirect that drops https is not followed.',
  );
  assert.equal(
    invalid('http://other.example.net/x.mp3', secure),
    'The audio URL redirected from https to http; a redirect that drops https is not followed.',
  );
  const plain = new URL('http://cdn.example.com/calls/1/audio');
  assert.equal(parseAudioUrl('https://cdn.example.com/x.mp3', plain).protocol, 'https:');
  assert.equal(parseAudioUrl('/x.mp3', plain).href, 'http://cdn.example.com/x.mp3');
  assert.equal(parseAudioUrl('http://cdn.example.com/x.mp3').protocol, 'http:', 'a submitted http URL is no redirect');
});
