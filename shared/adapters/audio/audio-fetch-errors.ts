/**
 * The `StepError`s of the audio fetch, one constructor per cause, and the translation of Node's
 * network errors. Messages are for the integrator (they become the call's `statusReason`): they name
 * the host and the cause but never a resolved address or a URL's query string (pre-signed URLs carry
 * secrets there).
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
 * `host` is refused because `address` (one of the addresses it resolves to, or the host itself when
 * it is an IP literal) is not public. The address goes into `cause` for the logs, not the message.
 */
export const fetchBlocked = (host: string, address: string, verdict: AddressVerdict & { allowed: false }) => {
  const embedded = verdict.embeddedIpv4 === undefined ? '' : ' (by the IPv4 address inside it)';
  const what = host === address ? `"${host}" is` : `"${host}" resolves to`;
  return fail(
    'audio_fetch_blocked',
    `The audio URL host ${what} ${addressClass[verdict.reason]} address${embedded}; only public internet ` +
      'addresses may be fetched. AUDIO_FETCH_ALLOW_PRIVATE=true lifts this check, for local development only.',
    false,
    new Error(`${address} is ${verdict.reason}${verdict.embeddedIpv4 ? ` (embedded ${verdict.embeddedIpv4})` : ''}`),
  );
};

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
  fail('audio_storage_error', `The audio could not be written to a temp file (${codeOf(cause) ?? 'I/O error'}).`, true, cause);

const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NODATA', 'EAI_NONAME', 'ENODATA']);

/** Any other failure on the way to the audio host: DNS, TCP, TLS, a connection cut mid-response. */
export const unreachable = (host: string, cause: unknown) => {
  const code = codeOf(cause);
  const problem =
    code !== undefined && DNS_CODES.has(code)
      ? `could not be resolved (${code})`
      : code === 'ECONNREFUSED'
        ? 'refused the connection'
        : code === 'ECONNRESET' || code === 'EPIPE' || code === 'ERR_STREAM_PREMATURE_CLOSE'
          ? `closed the connection early (${code})`
          : `could not be reached (${code ?? (cause instanceof Error ? cause.message : 'unknown error')})`;
  return fail('audio_unreachable', `The audio host "${host}" ${problem}.`, true, cause);
};

const codeOf = (error: unknown): string | undefined => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
};
