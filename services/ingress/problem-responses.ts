/**
 * The error answers of the OpenAPI document (/docs/json). A route's schema declares the answers of
 * its own rules (`problemResponses(400, 404)`); the answers every route of a kind can give, which
 * come from the app's hooks rather than the route, are added to the document here, so it declares
 * every error answer the service gives, as application/problem+json
 * (docs/decisions/0002-problem-json-errors.md).
 */
import { ProblemSchema } from '../../shared/domain/submission/submission-schema.ts';
import { AUTH_FAILURE_RULE } from './api-key-access.ts';

/** A route's error answers for its OpenAPI schema: each status → the problem+json body. */
export const problemResponses = (...statuses: number[]) => Object.fromEntries(statuses.map((s) => [s, ProblemSchema]));

interface OpenApiResponse {
  description?: string;
  content?: Record<string, { schema?: unknown }>;
  headers?: Record<string, unknown>;
}

interface OpenApiOperation {
  security?: Record<string, unknown>[];
  parameters?: { in?: string }[];
  responses?: Record<string, OpenApiResponse>;
}

export interface OpenApiDocument {
  paths?: Record<string, Record<string, OpenApiOperation>>;
}

const PROBLEM_MEDIA_TYPE = 'application/problem+json';

/** The problem schema as plain JSON (TypeBox's symbols left out). */
const problemSchema = (): unknown => JSON.parse(JSON.stringify(ProblemSchema)) as unknown;

/** A problem answer declared as a route's JSON answer: the problem schema's properties are all there. */
const isProblemSchema = (schema: unknown): boolean => {
  const required = (schema as { required?: unknown } | undefined)?.required;
  return Array.isArray(required) && ProblemSchema.required.every((name) => required.includes(name));
};

const RETRY_AFTER = {
  'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer', minimum: 1 } },
};

/**
 * The answers the app's hooks give on any route of a kind (README, "Errors" and "Limits and
 * fairness"), by status: what the route's kind is, and the codes it answers with.
 */
const SHARED_ANSWERS: {
  applies: (route: RouteKind) => boolean;
  status: number;
  description: string;
  /** The answer may carry Retry-After. */
  retryAfter?: boolean;
}[] = [
  {
    // Fastify reads the body of every method but GET and HEAD, whatever the route's schema.
    applies: (route) => route.readsBody,
    status: 400,
    description: 'MALFORMED_JSON: the body is not JSON (a route that takes none accepts an empty one).',
  },
  {
    applies: (route) => route.hasPathParameters,
    status: 400,
    description: 'BAD_REQUEST: the URL does not decode (`%c0`).',
  },
  {
    applies: (route) => route.admin,
    status: 401,
    description: 'ADMIN_TOKEN_INVALID: no admin token as Authorization: Bearer, or another one.',
  },
  {
    applies: (route) => route.apiKey,
    status: 401,
    description: `API_KEY_INVALID: no API key, or one that is malformed, unknown or revoked; with Retry-After once this address has failed more than ${AUTH_FAILURE_RULE.limit} times in ${AUTH_FAILURE_RULE.windowMs / 1000} s.`,
    retryAfter: true,
  },
  {
    applies: (route) => route.readsBody,
    status: 413,
    description: "PAYLOAD_TOO_LARGE: the body is over this route's limit.",
  },
  {
    applies: (route) => route.readsBody,
    status: 415,
    description:
      'UNSUPPORTED_MEDIA_TYPE: a body whose Content-Type is not application/json, or whose Content-Encoding is not identity.',
  },
  {
    applies: (route) => route.admin,
    status: 429,
    description: 'RATE_LIMITED: too many failed admin authentications from this address; see Retry-After.',
  },
  {
    applies: (route) => route.apiKey,
    status: 429,
    description: "RATE_LIMITED: over the key's limit; see Retry-After.",
  },
  {
    applies: () => true,
    status: 500,
    description: 'INTERNAL: an unexpected failure (logged; the detail carries no internal message).',
  },
  {
    applies: () => true,
    status: 503,
    description:
      'SERVICE_UNAVAILABLE: a backend cannot serve the request now, the request bodies being read at once fill their budget, or the process is shutting down; see Retry-After.',
  },
];

interface RouteKind {
  readsBody: boolean;
  hasPathParameters: boolean;
  admin: boolean;
  apiKey: boolean;
}

const kindOf = (method: string, operation: OpenApiOperation): RouteKind => {
  // The guard a route runs is the security it declares: adminGuard for the admin token, the API key
  // check for the push API's two ways of sending a key.
  const schemes = new Set((operation.security ?? []).flatMap((requirement) => Object.keys(requirement)));
  return {
    readsBody: method !== 'get' && method !== 'head',
    hasPathParameters: (operation.parameters ?? []).some((parameter) => parameter.in === 'path'),
    admin: schemes.has('adminToken'),
    apiKey: schemes.has('apiKeyHeader') || schemes.has('bearer'),
  };
};

/**
 * Completes the document's error answers: each route's own, declared with the JSON schema of a
 * problem, get the content type they are sent with, and each route gets the answers of its kind
 * it does not declare itself. A 429 or 503 problem always carries Retry-After, an API key's 401 at times.
 */
export const problemJsonResponses = <T extends OpenApiDocument>(document: T): T => {
  for (const operations of Object.values(document.paths ?? {})) {
    for (const [method, operation] of Object.entries(operations)) {
      const responses = (operation.responses ??= {});
      for (const [status, response] of Object.entries(responses)) {
        const json = response.content?.['application/json'];
        // /readyz's 503 is its report, sent as application/json.
        if (Number(status) < 400 || !json || !isProblemSchema(json.schema)) continue;
        response.content = { [PROBLEM_MEDIA_TYPE]: json };
      }
      const kind = kindOf(method, operation);
      const shared = new Map<number, string[]>();
      const retryAfter = new Set(['429', '503']);
      for (const answer of SHARED_ANSWERS) {
        if (!answer.applies(kind)) continue;
        shared.set(answer.status, [...(shared.get(answer.status) ?? []), answer.description]);
        if (answer.retryAfter) retryAfter.add(String(answer.status));
      }
      for (const [status, descriptions] of shared) {
        const response = responses[status];
        if (!response) {
          const content = { [PROBLEM_MEDIA_TYPE]: { schema: problemSchema() } };
          responses[status] = { description: descriptions.join(' '), content };
        } else if (!response.content?.[PROBLEM_MEDIA_TYPE]) {
          // An answer of the route's own under the same status (/readyz's 503 is its report), and the problem.
          response.description = [response.description, ...descriptions].filter(Boolean).join(' ');
          response.content = { ...response.content, [PROBLEM_MEDIA_TYPE]: { schema: problemSchema() } };
        }
      }
      for (const status of retryAfter) {
        const response = responses[status];
        if (response?.content?.[PROBLEM_MEDIA_TYPE]) response.headers ??= structuredClone(RETRY_AFTER);
      }
    }
  }
  return document;
};
