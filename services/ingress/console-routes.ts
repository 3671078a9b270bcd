/**
 * GET /console: the call console, static files from `services/console/` read once at start (from
 * the source tree, or beside the compiled JavaScript's tree). The page talks only to the public
 * read API and the ingest endpoint with the key a person pastes; no script, style or font comes
 * from anywhere else (content security policy).
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { TypedApp } from './typed-app.ts';

const FILES = {
  'index.html': 'text/html; charset=utf-8',
  'console.js': 'text/javascript; charset=utf-8',
  'console.css': 'text/css; charset=utf-8',
} as const;

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/** The console's folder: next to this file's folder in the source tree; dist/ holds no copy. */
const consoleDir = (): string => {
  const candidates = ['../console/', '../../../services/console/'].map((relative) =>
    fileURLToPath(new URL(relative, import.meta.url)),
  );
  const found = candidates.find((dir) => existsSync(`${dir}index.html`));
  if (!found) throw new Error(`the console's files are missing (looked in ${candidates.join(', ')})`);
  return found;
};

export const registerConsoleRoutes = (app: TypedApp): void => {
  const dir = consoleDir();
  const files = new Map(
    Object.entries(FILES).map(([name, type]) => [name, { body: readFileSync(`${dir}${name}`), type }]),
  );
  const serve = (name: keyof typeof FILES) => async (_request: unknown, reply: import('fastify').FastifyReply) => {
    const file = files.get(name)!;
    return reply
      .type(file.type)
      .header('content-security-policy', CSP)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .header('cache-control', 'no-cache')
      .send(file.body);
  };
  const hide = { schema: { hide: true } };
  app.get('/console', hide, serve('index.html'));
  app.get('/console/', hide, serve('index.html'));
  app.get('/console/console.js', hide, serve('console.js'));
  app.get('/console/console.css', hide, serve('console.css'));
};
