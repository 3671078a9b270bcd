#!/usr/bin/env node
// `prepare` (so after every `npm ci` / `npm install`): the native addon better-sqlite3 must be built
// for the Node.js that loads it, the one the project installs as its platform package
// (node_modules/.bin/node, docs/runtime.md). npm compiles it during the install against the headers
// `.npmrc` names; when that build is missing or was made for another Node (another `nodedir`, a
// node_modules installed or copied from elsewhere), it is rebuilt here against the headers shipped
// next to node_modules/.bin/node, and loaded again. Exits non-zero, saying why, when it still does
// not load.
import { spawnSync } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const fail = (message) => {
  console.error(`native addons: ${message}`);
  process.exit(1);
};

let projectNode;
try {
  projectNode = realpathSync(join(root, 'node_modules/.bin/node'));
} catch {
  fail(`node_modules/.bin/node is missing: the platform package of Node.js (node-${process.platform}-${process.arch}) did not install; see docs/runtime.md`);
}
if (realpathSync(process.execPath) !== projectNode) {
  fail(
    `running on ${process.execPath} (${process.version}), not on the project's Node.js ${projectNode}. ` +
      'Run it through npm (npm ci, npm run …), which puts node_modules/.bin first on PATH, or with node_modules/.bin/node.',
  );
}

/** Loads better-sqlite3 in a fresh process of this Node and runs one statement; the error text when that fails. */
const loadError = () => {
  const probe = "new (require('better-sqlite3'))(':memory:').prepare('select 1').get()";
  const run = spawnSync(process.execPath, ['-e', probe], { cwd: root, encoding: 'utf8' });
  return run.status === 0 ? undefined : (run.stderr || run.error?.message || `exit ${run.status ?? run.signal}`).trim();
};

const before = loadError();
if (before === undefined) process.exit(0);

// The platform package is laid out like a Node.js release: bin/node beside include/node.
const nodedir = dirname(dirname(projectNode));
const headers = join(nodedir, 'include', 'node');
if (!existsSync(join(headers, 'node.h'))) fail(`better-sqlite3 does not load, and there are no Node.js headers in ${headers} to rebuild it against:\n${before}`);

const lines = before.split('\n');
console.error(`native addons: better-sqlite3 does not load on Node.js ${process.version}; rebuilding it against ${headers}`);
console.error(`  (${lines.filter((line) => /NODE_MODULE_VERSION/.test(line)).join(' ') || lines.find((line) => /Error|Could not locate/.test(line)) || lines[0]})`);
// npm runs the addon's own install script (prebuild-install, else node-gyp against nodedir) with
// node_modules/.bin first on PATH, so for this Node.
const npmCli = process.env.npm_execpath;
const [command, args] = npmCli ? [process.execPath, [npmCli]] : ['npm', []];
const rebuild = spawnSync(command, [...args, 'rebuild', 'better-sqlite3', '--foreground-scripts'], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, npm_config_nodedir: nodedir },
});
if (rebuild.status !== 0) fail(`npm rebuild better-sqlite3 failed (exit ${rebuild.status ?? rebuild.signal})`);
const after = loadError();
if (after !== undefined) fail(`better-sqlite3 still does not load on Node.js ${process.version} after the rebuild:\n${after}`);
console.error(`native addons: better-sqlite3 rebuilt for Node.js ${process.version}`);
