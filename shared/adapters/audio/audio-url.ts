import { urlInvalid } from './audio-fetch-errors.ts';

/**
 * Parses a URL the fetcher is about to request: the submitted `audioUrl`, or a redirect's `Location`
 * resolved against `base`. Only http(s) with a host and without user or password, and no redirect
 * from https to http; the fragment is dropped. WHATWG parsing also normalises IP literals (`0x7f.1` → `127.0.0.1`, `[::ffff:127.0.0.1]` →
 * `[::ffff:7f00:1]`), so the address check sees the address the socket would use.
 * @throws StepError `audio_url_invalid`
 */
export const parseAudioUrl = (raw: string, base?: URL): URL => {
  const subject = base === undefined ? '' : ' redirected to a location that';
  let url: URL;
  try {
    url = new URL(raw, base);
  } catch {
    throw urlInvalid(base === undefined ? 'is not a valid URL' : 'redirected to an invalid location');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw urlInvalid(
      `${subject} uses the "${url.protocol.slice(0, -1)}" scheme; only http and https are fetched`.trim(),
    );
  }
  if (url.username !== '' || url.password !== '') {
    throw urlInvalid(`${subject} carries a user name or password; credentials in the URL are not allowed`.trim());
  }
  if (url.hostname === '') throw urlInvalid(`${subject} has no host`.trim());
  // The rest of the exchange would travel in clear text, open to anyone on the path.
  if (base?.protocol === 'https:' && url.protocol === 'http:')
    throw urlInvalid('redirected from https to http; a redirect that drops https is not followed');
  url.hash = '';
  return url;
};
