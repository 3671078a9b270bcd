/**
 * The token of an `Authorization: Bearer <token>` header (scheme case-insensitive, one token, white
 * space around it allowed), or undefined for any other header, a missing one or a repeated one.
 */
export const bearerToken = (authorization: string | string[] | undefined): string | undefined =>
  typeof authorization === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1] : undefined;
