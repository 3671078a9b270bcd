/**
 * The token of an `Authorization: Bearer <token>` header (scheme case-insensitive, one token, spaces
 * and tabs around it allowed, as HTTP allows them; no other white space, so a token followed by
 * U+00A0 is not the token), or undefined for any other header, a missing one or a repeated one.
 */
export const bearerToken = (authorization: string | string[] | undefined): string | undefined =>
  typeof authorization === 'string' ? /^Bearer[ \t]+([^ \t]+)[ \t]*$/i.exec(authorization)?.[1] : undefined;
