/**
 * Admission of request bodies by their size. A body is held as text, then parsed, until its answer
 * is sent: a 10 MB ingest body costs the heap two to three times its size. Bodies are admitted
 * while the bytes of those in flight stay within a budget (an eighth of the heap, and at least two
 * of the largest bodies any route takes); a body that does not fit waits its turn, unread, in the
 * order it came, and after `waitMs` is answered 503 with Retry-After, nothing accepted. Forty 10 MB
 * calls sent at once ran the embedded service out of its 256 MB heap; they now take turns. Small
 * bodies count too, but a budget of tens of megabytes holds thousands of them.
 *
 * The budget is taken in `preParsing`, after the key check and the rate limit (onRequest) and
 * before a byte of the body is read; a body whose Content-Length is over its route's limit, or that
 * no parser takes (a 415), is refused unread and takes none. A body without a Content-Length
 * (chunked) takes its route's limit, the most it can be. It is given back once the answer is sent
 * or the connection closed.
 */
import { getHeapStatistics } from 'node:v8';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ProblemError } from './errors.ts';

export interface BodyBudget {
  /** Bytes that may be in flight at once. */
  readonly capacity: number;
  /** Bytes of the bodies admitted and not yet given back. */
  readonly inUse: number;
  /** Bodies waiting for room. */
  readonly waiting: number;
  /** Resolves true once `bytes` are admitted, false when they were not within `waitMs`. */
  acquire(bytes: number): Promise<boolean>;
  release(bytes: number): void;
}

export const createBodyBudget = (capacity: number, waitMs: number): BodyBudget => {
  let inUse = 0;
  const queue: { bytes: number; admit: () => void }[] = [];
  const fits = (bytes: number) => inUse + bytes <= capacity;
  const drain = () => {
    // In order: a large body at the head is not overtaken by the small ones behind it for ever.
    while (queue.length > 0 && fits(queue[0]!.bytes)) {
      const next = queue.shift()!;
      inUse += next.bytes;
      next.admit();
    }
  };
  return {
    capacity,
    get inUse() {
      return inUse;
    },
    get waiting() {
      return queue.length;
    },
    acquire(bytes) {
      if (queue.length === 0 && fits(bytes)) {
        inUse += bytes;
        return Promise.resolve(true);
      }
      return new Promise<boolean>((resolve) => {
        const entry = {
          bytes,
          admit: () => {
            clearTimeout(timer);
            resolve(true);
          },
        };
        const timer = setTimeout(() => {
          queue.splice(queue.indexOf(entry), 1);
          drain(); // the bodies behind it may fit
          resolve(false);
        }, waitMs);
        queue.push(entry);
      });
    },
    release(bytes) {
      inUse -= bytes;
      drain();
    },
  };
};

/** How long a body waits for room before its 503. */
export const BODY_WAIT_MS = 10_000;

/** The budget of a process: an eighth of its heap, and at least two of the largest bodies taken. */
export const bodyBudgetFor = (largestBodyLimit: number): BodyBudget =>
  createBodyBudget(Math.max(2 * largestBodyLimit, Math.floor(getHeapStatistics().heap_size_limit / 8)), BODY_WAIT_MS);

const held = new WeakMap<FastifyRequest, number>();

export const registerBodyBudget = (app: FastifyInstance, budget: BodyBudget): void => {
  const giveBack = (request: FastifyRequest) => {
    const bytes = held.get(request);
    if (bytes === undefined) return;
    held.delete(request);
    budget.release(bytes);
  };
  app.addHook('preParsing', async (request, reply, payload) => {
    const type = request.headers['content-type'];
    if (typeof type !== 'string' || !/^application\/json\s*(;|$)/i.test(type)) return payload;
    const limit = request.routeOptions.bodyLimit ?? app.initialConfig.bodyLimit ?? 1024 * 1024;
    const declared = Number(request.headers['content-length']);
    if (declared === 0 || declared > limit) return payload;
    const bytes = Number.isFinite(declared) && declared > 0 ? declared : limit;
    if (!(await budget.acquire(bytes)))
      throw new ProblemError(
        'SERVICE_UNAVAILABLE',
        `Too many large request bodies are being read at once; this one was not read and nothing was accepted. Retry after the Retry-After delay.`,
        { headers: { 'retry-after': '1' } },
      );
    held.set(request, bytes);
    // Given back when the answer is done, or the connection closed first (then also if it closed
    // while the body waited).
    if (reply.raw.writableFinished || request.raw.destroyed) giveBack(request);
    else reply.raw.once('close', () => giveBack(request));
    return payload;
  });
};
