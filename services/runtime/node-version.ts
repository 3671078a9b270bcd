/**
 * The service runs on Node.js 24 (package.json `engines`, docs/runtime.md). Imported first by every
 * entry point, so a process started with another Node.js (the machine's own, when `node` is typed
 * where `node_modules/.bin/node` was meant) stops at once with one line saying which to use,
 * instead of starting and then failing every call it handles (`Promise.withResolvers` and other
 * features Node.js 20 lacks).
 */
import { realpathSync } from 'node:fs';

/** The Node.js major versions the service runs on (`engines.node` in package.json: >=24.11 <25). */
export const SUPPORTED_NODE = { major: 24, minMinor: 11 } as const;

/** Why `version` (e.g. "20.20.2") cannot run the service, or undefined when it can. */
export const unsupportedNode = (version: string): string | undefined => {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  if (major === SUPPORTED_NODE.major && minor >= SUPPORTED_NODE.minMinor) return undefined;
  return `this is Node.js ${version}, and the service runs on Node.js ${SUPPORTED_NODE.major} (${SUPPORTED_NODE.major}.${SUPPORTED_NODE.minMinor} or later): start it with the one npm ci installed, node_modules/.bin/node (npm start and npm run admin do), see docs/runtime.md`;
};

const refusal = unsupportedNode(process.versions.node);
if (refusal !== undefined) {
  let path = process.execPath;
  try {
    path = realpathSync(path);
  } catch {
    // the name it was started by will do
  }
  process.stderr.write(`call ingestion service cannot start (${path}): ${refusal}\n`);
  process.exit(1);
}
