/**
 * The `StepError`s of the audio fetch, one constructor per cause, and the translation of Node's
 * network errors. Messages are for the integrator (they become the call's `statusReason`): they name
 * the host as given but never a resolved address, how a connection failed, or a URL's query string
 * (pre-signed URLs carry secrets there). A refused and an unreachable host read the same, so the
 * messages reveal nothing of the service's name resolution or of which ports answer; a name refused
 * for what it resolves to is even an unreachable host, code and retries included.
 */
import type { AudioFetchErrorCode } from '../../ports/audio-source.ts';
import { StepError } from '../../ports/step-error.ts';
import type { AddressVerdict, BlockedAddressReason } from './address-policy.ts';

const fail = (code: AudioFetchErrorCode, message: string, retriable: boolean, cause?: unknown) =>
  new StepError(code, message, retriable, cause === undefined ? undefined : { cause });

/** A URL shown in a message: origin and path only. */
export const describeUrl = (url: URL) => `${url.origin}${url.pathname}`;

export const urlInvalid = (problem: string) => fail('audio_url_invalid', `The audio URL ${problem}.`, false);

const addressClass: Record<BlockedAddressReason, string> = {
  unspecified: 'an unspecified ("this network")',
  loopback: 'a loopback',
  private: 'a private-network',
  'link-local': 'a link-local',
  metadata: 'a cloud metadata service',
  cgnat: 'a carrier-grade NAT (100.64.0.0/10)',
  multicast: 'a multicast',
  broadcast: 'a broadcast',
  documentation: 'a documentation-only',
  benchmarking: 'a benchmarking',
  reserved: 'a reserved',
  'ipv4-mapped': 'an IPv4-mapped IPv6',
  'ipv4-compatible': 'an IPv4-compatible IPv6',
  'not-an-ip': 'an unrecognised',
};

/**
 * Said of a host that is refused and of one that cannot be reached alike: which of the two, what
 * the host resolved to and how the connection failed stay in `cause`, for the logs.
 */
const notReached = (host: string) =>
  `The audio host "${host}" could not be reached, or is not a public internet address.`;

/** Why `address` is refused, for `cause`: its class, which the message never tells. */
const notPublic = (address: string, verdict: AddressVerdict & { allowed: false }) =>
  new Error(
    `${address} is ${addressClass[verdict.reason]} address${verdict.embeddedIpv4 ? ` (embedded ${verdict.embeddedIpv4})` : ''}; ` +
      'AUDIO_FETCH_ALLOW_PRIVATE=true lifts the check, for local development only',
  );

/**
 * The URL's host is an IP literal that is not public: refused for good. The caller wrote the address,
 * so saying it is refused tells nothing of the service's network. The class goes into `cause`.
 */
export const fetchBlocked = (host: string, verdict: AddressVerdict & { allowed: false }) =>
  fail('audio_fetch_blocked', notReached(host), false, notPublic(host, verdict));

/**
 * The URL's host is a name, and `address`, one of the addresses it resolves to, is not public. It is
 * answered as a host that cannot be reached (same code, retried the same, same words): a refusal
 * would tell a tenant that the name resolves inside the service's network, where an unknown name
 * is unreachable, so internal names could be probed one by one. The address and its class are in
 * `cause`, for the logs.
 */
export const nameNotPublic = (host: string, address: string, verdict: AddressVerdict & { allowed: false }) =>
  unreachable(host, notPublic(address, verdict));

/** The URL names a port that is not allowed (`AUDIO_ALLOWED_PORTS`, default 80 and 443). */
export const portBlocked = (port: number, allowed: readonly number[]) =>
  fail(
    'audio_fetch_blocked',
    `The audio URL uses port ${port}; only port${allowed.length > 1 ? 's' : ''} ${allowed.join(', ')} may be fetched.`,
    false,
  );

export const tooLarge = (maxBytes: number, declared?: number) =>
  fail(
    'audio_too_large',
    declared === undefined
      ? `The audio is larger than the ${maxBytes}-byte limit.`
      : `The audio is ${declared} bytes (Content-Length), over the ${maxBytes}-byte limit.`,
    false,
  );

export const unsupportedType = (contentType: string | undefined) =>
  fail(
    'audio_unsupported_type',
    contentType
      ? `The audio URL returned content type "${contentType}"; expected audio/*, video/* or application/octet-stream.`
      : 'The audio URL returned no Content-Type; expected audio/*, video/* or application/octet-stream.',
    false,
  );

export const httpStatus = (status: number, url: URL) => {
  if (status === 404 || status === 410) {
    return fail('audio_not_found', `The audio URL ${describeUrl(url)} answered ${status}: nothing there.`, false);
  }
  const retriable = status >= 500 || status === 429 || status === 408;
  return fail('audio_http_error', `The audio URL ${describeUrl(url)} answered HTTP ${status}.`, retriable);
};

export const tooManyRedirects = (maxRedirects: number) =>
  fail('audio_too_many_redirects', `The audio URL redirected more than ${maxRedirects} times.`, false);

export const timedOut = (timeoutMs: number) =>
  fail('audio_timeout', `Fetching the audio did not finish within ${timeoutMs} ms.`, true);

export const storageFailed = (cause: unknown) =>
  fail(
    'audio_storage_error',
    `The audio could not be written to a temp file (${codeOf(cause) ?? 'I/O error'}).`,
    true,
    cause,
  );

/** Any other failure on the way to the audio host: DNS, TCP, TLS, a connection cut mid-response. */
export const unreachable = (host: string, cause: unknown) => fail('audio_unreachable', notReached(host), true, cause);

const codeOf = (error: unknown): string | undefined => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
};
