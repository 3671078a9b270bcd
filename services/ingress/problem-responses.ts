import { ProblemSchema } from '../../shared/domain/submission/submission-schema.ts';

/** A route's error answers for its OpenAPI schema: each status → the problem+json body. */
export const problemResponses = (...statuses: number[]) => Object.fromEntries(statuses.map((s) => [s, ProblemSchema]));
