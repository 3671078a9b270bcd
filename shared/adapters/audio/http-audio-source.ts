import { open, rm } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { http } from '../../node-http.ts';
import https from 'node:https';
import { isIP } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { AudioSource, FetchedAudio } from '../../ports/audio-source.ts';
import { isStepError } from '../../ports/step-error.ts';
import { type AddressVerdict, classifyAddress } from './address-policy.ts';
import {
  fetchBlocked,
  portBlocked,
  httpStatus,
  nameNotPublic,
  storageFailed,
  timedOut,
  tooLarge,
  tooManyRedirects,
  unreachable,
  unsupportedType,
} from './audio-fetch-errors.ts';
import { parseAudioUrl } from './audio-url.ts';
import { guardedLookup, type ResolveHost, systemResolveHost } from './guarded-lookup.ts';
import { processTempName, sweepStaleTempFiles } from './process-temp-files.ts';

export interface HttpAudioSourceOptions {
  /** Largest body accepted, in bytes; a bigger Content-Length or body fails with `audio_too_large`. */
  maxBytes: number;
  /** Deadline for the whole fetch — every DNS lookup, connection and redirect, and the body — in ms. */
  timeoutMs: number;
  /** Skips the address and port checks (`AUDIO_FETCH_ALLOW_PRIVATE=true`). Local development and tests only. */
  allowPrivate: boolean;
  /** Ports a URL (or a redirect) may name; another is `audio_fetch_blocked`. Default `DEFAULT_AUDIO_PORTS`. */
  allowedPorts?: readonly number[];
  /** Directory of the temp files; default `os.tmpdir()`. */
  tmpDir?: string;
  /** Redirects followed; one more fails with `audio_too_many_redirects`. Default 3. */
  maxRedirects?: number;
  /** Test seam: the address policy; default `classifyAddress`. Lets a test allow 127.0.0.1 but not 127.0.0.2. */
  classifyAddress?: (ip: string) => AddressVerdict;
  /** Test seam: host name resolution; default `dns.lookup(host, { all: true })`. */
  resolveHost?: ResolveHost;
}

export const USER_AGENT = 'call-ingestion-service/1.0';
/** http and https on their standard ports: anything else would let a caller probe the internet's ports. */
export const DEFAULT_AUDIO_PORTS: readonly number[] = [80, 443];
/** Temp files are `audio-<pid>-<uuid>`, so those of a dead process can be swept. */
const TEMP_PREFIX = 'audio-';
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const ACCEPTED_TYPES = /^(?:audio\/[^/\s]+|video\/[^/\s]+|application\/octet-stream)$/;

/**
 * The `AudioSource` over HTTP(S), hardened against server-side request forgery: every address a
 * host resolves to is checked when the socket connects (so a DNS answer cannot change between check
 * and use), IP literals before the request, and each redirect — followed by hand — is re-validated
 * and re-checked; only the allowed ports (80 and 443 by default) are requested, and a redirect from
 * https to http is not followed. A refused IP literal is `audio_fetch_blocked`; a name refused for
 * its addresses is `audio_unreachable`, as a name that does not resolve, so the service's name
 * resolution is no oracle of its internal names. No agent is shared, so no pooled connection skips the check; no cookies or
 * credentials are ever sent.
 */
export const createHttpAudioSource = (options: HttpAudioSourceOptions): AudioSource => {
  const {
    maxBytes,
    timeoutMs,
    allowPrivate,
    tmpDir = tmpdir(),
    maxRedirects = 3,
    allowedPorts = DEFAULT_AUDIO_PORTS,
  } = options;
  for (const [name, value, min] of [
    ['maxBytes', maxBytes, 1],
    ['timeoutMs', timeoutMs, 1],
    ['maxRedirects', maxRedirects, 0],
  ] as const) {
    if (!Number.isSafeInteger(value) || value < min)
      throw new RangeError(`${name} must be an integer ≥ ${min}, got ${value}`);
  }
  if (
    allowedPorts.length === 0 ||
    allowedPorts.some((port) => !Number.isSafeInteger(port) || port < 1 || port > 65_535)
  ) {
    throw new RangeError(`allowedPorts must be ports 1–65535, got ${allowedPorts.join(',') || 'none'}`);
  }
  const classify = options.classifyAddress ?? classifyAddress;

  /** The verdict on an address when the policy refuses it. */
  const refusal = (address: string) => {
    if (allowPrivate) return undefined;
    const verdict = classify(address);
    return verdict.allowed ? undefined : verdict;
  };
  // A name whose addresses are refused reads as an unreachable host; an IP literal is refused below.
  const lookup = guardedLookup(options.resolveHost ?? systemResolveHost, (address, host) => {
    const verdict = refusal(address);
    return verdict && nameNotPublic(host, address, verdict);
  });

  /** One GET, resolved with the response head. */
  const request = (url: URL, signal: AbortSignal): Promise<IncomingMessage> => {
    const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
    if (!allowPrivate && !allowedPorts.includes(port)) return Promise.reject(portBlocked(port, allowedPorts));
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    if (isIP(host)) {
      const verdict = refusal(host);
      if (verdict) return Promise.reject(fetchBlocked(host, verdict));
    }
    return new Promise((resolve, reject) => {
      const client = url.protocol === 'https:' ? https : http;
      const req = client.request(
        url,
        {
          method: 'GET',
          agent: false,
          lookup,
          signal,
          headers: {
            'user-agent': USER_AGENT,
            accept: 'audio/*, video/*, application/octet-stream',
            'accept-encoding': 'identity',
          },
        },
        resolve,
      );
      req.on('error', reject);
      req.end();
    });
  };

  /** Checks the final response's head, then streams its body into a new temp file. */
  const receive = async (response: IncomingMessage, url: URL, signal: AbortSignal): Promise<FetchedAudio> => {
    const status = response.statusCode ?? 0;
    const contentType = response.headers['content-type']?.split(';')[0]?.trim().toLowerCase();
    const declared = Number(response.headers['content-length'] ?? Number.NaN);
    const refusal =
      status < 200 || status > 299
        ? httpStatus(status, url)
        : !contentType || !ACCEPTED_TYPES.test(contentType)
          ? unsupportedType(contentType)
          : declared > maxBytes
            ? tooLarge(maxBytes, declared)
            : undefined;
    if (refusal) {
      response.destroy();
      throw refusal;
    }

    const path = join(tmpDir, processTempName(TEMP_PREFIX));
    // Create the file before streaming, so a failure at any later point has a file to remove.
    const file = await open(path, 'wx', 0o600).catch((error: unknown) => {
      response.destroy();
      throw storageFailed(error);
    });
    let bytes = 0;
    const cap = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        bytes += chunk.length;
        done(bytes > maxBytes ? tooLarge(maxBytes) : null, chunk);
      },
    });
    // File errors become storage errors here, where they cannot be confused with network errors.
    const sink = new Writable({
      write: (chunk: Buffer, _encoding, done) =>
        void file.write(chunk).then(
          () => done(),
          (error: unknown) => done(storageFailed(error)),
        ),
      final: (done) =>
        void file.close().then(
          () => done(),
          (error: unknown) => done(storageFailed(error)),
        ),
      destroy: (error, done) => void file.close().finally(() => done(error)),
    });
    try {
      await pipeline(response, cap, sink, { signal });
    } catch (error) {
      await rm(path, { force: true });
      throw error;
    }
    return {
      path,
      bytes,
      contentType: contentType ?? '',
      finalUrl: url.href,
      cleanup: () => rm(path, { force: true }),
    };
  };

  return {
    async fetch(rawUrl, { signal: callerSignal, timeoutMs: callerTimeoutMs } = {}) {
      callerSignal?.throwIfAborted();
      let url = parseAudioUrl(rawUrl);
      const deadlineMs = Math.max(1, Math.min(timeoutMs, callerTimeoutMs ?? timeoutMs));
      const deadline = AbortSignal.timeout(deadlineMs);
      const signal = callerSignal ? AbortSignal.any([deadline, callerSignal]) : deadline;
      try {
        for (let redirects = 0; ; redirects++) {
          const response = await request(url, signal);
          const location = response.headers.location;
          if (!REDIRECT_STATUSES.has(response.statusCode ?? 0) || location === undefined) {
            return await receive(response, url, signal);
          }
          response.destroy();
          if (redirects === maxRedirects) throw tooManyRedirects(maxRedirects);
          url = parseAudioUrl(location, url);
        }
      } catch (error) {
        if (isStepError(error)) throw error;
        if (callerSignal?.aborted) throw callerSignal.reason;
        if (deadline.aborted) throw timedOut(deadlineMs);
        throw unreachable(url.hostname, error);
      }
    },
    sweepStale: () => sweepStaleTempFiles(tmpDir, TEMP_PREFIX),
  };
};
