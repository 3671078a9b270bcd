/**
 * The request body as it arrived, kept only for requests that carry an Idempotency-Key: two
 * requests with one key are "the same request" when their bytes are the same. Hashing the bytes
 * also costs nothing like serialising a parsed 10 MB body again.
 */
import type { FastifyRequest } from 'fastify';

const RAW = new WeakMap<FastifyRequest, string>();

export const rememberRawBody = (request: FastifyRequest, text: string): void => {
  RAW.set(request, text);
};

export const rawBodyOf = (request: FastifyRequest): string | undefined => RAW.get(request);
