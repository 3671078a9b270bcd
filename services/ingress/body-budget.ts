/**
 * Admission of request bodies by their size. A body is held as text, then parsed, until its answer
 * is sent: a 10 MB ingest body costs the heap two to three times its size. Bodies are admitted
 * while the bytes of those in flight stay within a budget (an eighth of the heap, and at least two
 * of the largest bodies any route takes); a body that does not fit waits its turn, unread, in the
 * order it came, and after `waitMs` is answered 503 with Retry-After, nothing accepted. Forty 10 MB
 * calls sent at once ran the embedded service out of its 256 MB heap; they now take turns. Small
 * bodies count too, but a budget of tens of megabytes holds thousands of them, and one that fits
 * passes the large ones waiting. One team holds at most half the budget: its bodies, however slowly
 * they arrive, never keep the other teams' out.
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
  /** Resolves true once `bytes` are admitted for `owner`, false when they were not within the wait. */
  acquire(bytes: number, owner: string): Promise<boolean>;
  release(bytes: number, owner: string): void;
}

/** A body this small passes the bodies waiting for room when it fits: it costs next to nothing. */
export const SMALL_BODY_BYTES = 64 * 1024;

/**
 * The budget, shared by owners (a team, the admin, anyone else): one owner holds at most half of
 * it, so an owner whose bodies are slow to arrive (each holds its share from admission to answer)
 * never keeps the others' out.
 */
export const createBodyBudget = (capacity: number, waitMs: number): BodyBudget => {
  const share = Math.floor(capacity / 2);
  let inUse = 0;
  const byOwner = new Map<string, number>();
  const queue: { bytes: number; owner: string; since: number; admit: () => void }[] = [];
  const withinShare = (bytes: number, owner: string) => (byOwner.get(owner) ?? 0) + bytes <= share;
  const take = (bytes: number, owner: string) => {
    inUse += bytes;
    byOwner.set(owner, (byOwner.get(owner) ?? 0) + bytes);
  };
  const drain = () => {
    // In order: a large body the whole budget cannot take yet is not overtaken by the large ones
    // behind it; small ones may pass it until it has waited half its wait, then room is kept for
    // it. One its owner's share cannot take waits without holding up the others'.
    let blocked = false;
    let starving = false;
    const now = performance.now();
    for (let i = 0; i < queue.length;) {
      const entry = queue[i]!;
      const fits = inUse + entry.bytes <= capacity;
      const mine = withinShare(entry.bytes, entry.owner);
      const mayPass = !blocked || (entry.bytes <= SMALL_BODY_BYTES && !starving);
      if (fits && mine && mayPass) {
        queue.splice(i, 1);
        take(entry.bytes, entry.owner);
        entry.admit();
        continue;
      }
      if (mine && !fits) {
        blocked = true;
        if (now - entry.since >= waitMs / 2) starving = true;
      }
      i++;
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
    acquire(bytes, owner) {
      return new Promise<boolean>((resolve) => {
        const wait: { timer?: NodeJS.Timeout } = {};
        let admitted = false;
        const entry = {
          bytes,
          owner,
          since: performance.now(),
          admit: () => {
            admitted = true;
            clearTimeout(wait.timer);
            resolve(true);
          },
        };
        queue.push(entry);
        drain();
        if (admitted) return;
        wait.timer = setTimeout(() => {
          queue.splice(queue.indexOf(entry), 1);
          drain(); // the bodies behind it may fit
          resolve(false);
        }, waitMs);
      });
    },
    release(bytes, owner) {
      inUse -= bytes;
      const left = (byOwner.get(owner) ?? 0) - bytes;
      if (left > 0) byOwner.set(owner, left);
      else byOwner.delete(owner);
      drain();
    },
  };
};

/** How long a body waits for room before its 503. */
export const BODY_WAIT_MS = 10_000;

/** The budget of a process: an eighth of its heap, and at least two of the largest bodies taken. */
export const bodyBudgetFor = (largestBodyLimit: number): BodyBudget =>
  createBodyBudget(Math.max(2 * largestBodyLimit, Math.floor(getHeapStatistics().heap_size_limit / 8)), BODY_WAIT_MS);

const held = new WeakMap<FastifyRequest, { bytes: number; owner: string }>();

export const registerBodyBudget = (app: FastifyInstance, budget: BodyBudget): void => {
  const giveBack = (request: FastifyRequest) => {
    const holding = held.get(request);
    if (holding === undefined) return;
    held.delete(request);
    budget.release(holding.bytes, holding.owner);
  };
  app.addHook('preParsing', async (request, reply, payload) => {
    const type = request.headers['content-type'];
    if (typeof type !== 'string' || !/^application\/json\s*(;|$)/i.test(type)) return payload;
    const limit = request.routeOptions.bodyLimit ?? app.initialConfig.bodyLimit ?? 1024 * 1024;
    const declared = Number(request.headers['content-length']);
    if (declared === 0 || declared > limit) return payload;
    const bytes = Number.isFinite(declared) && declared > 0 ? declared : limit;
    // The key's team (the key check ran in onRequest), the admin API (its token was checked there
    // too), or anyone else: a route that does not exist, whose caller no check has vouched for.
    const owner = request.apiKey
      ? `team:${request.apiKey.teamId}`
      : !request.is404 && request.url.startsWith('/api/admin/')
        ? 'admin'
        : 'anonymous';
    if (!(await budget.acquire(bytes, owner)))
      throw new ProblemError(
        'SERVICE_UNAVAILABLE',
        `Too many large request bodies are being read at once; this one was not read and nothing was accepted. Retry after the Retry-After delay.`,
        { headers: { 'retry-after': '1' } },
      );
    held.set(request, { bytes, owner });
    // Given back when the answer is done, or the connection closed first (then also if it closed
    // while the body waited).
    if (reply.raw.writableFinished || request.raw.destroyed) giveBack(request);
    else reply.raw.once('close', () => giveBack(request));
    return payload;
  });
};
