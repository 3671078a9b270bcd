#!/usr/bin/env node
// `prepare` (so after every `npm ci` / `npm install`): checks that the native addon better-sqlite3
// loads on the Node.js the project installs (node_modules/.bin/node, docs/runtime.md). Since 13.x it
// is a Node-API addon with prebuilt binaries in its package (one binary for every Node >= 22), so
// nothing is compiled during the install. When it does not load here (no prebuilt binary for this
// platform, or one this system cannot load), it is compiled from its sources with node-gyp against
// the headers shipped next to node_modules/.bin/node (nothing is downloaded), and loaded again.
// Exits non-zero, saying why, when it still does not load.
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
  fail(
    `node_modules/.bin/node is missing: the platform package of Node.js (node-${process.platform}-${process.arch}) did not install; see docs/runtime.md`,
  );
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
if (!existsSync(join(headers, 'node.h')))
  fail(
    `better-sqlite3 does not load, and there are no Node.js headers in ${headers} to compile it against:\n${before}`,
  );

const lines = before.split('\n');
console.error(
  `native addons: better-sqlite3 does not load on Node.js ${process.version}; compiling it against ${headers}`,
);
console.error(
  `  (${lines.filter((line) => /NODE_MODULE_VERSION/.test(line)).join(' ') || lines.find((line) => /Error|Could not locate/.test(line)) || lines[0]})`,
);
// The package's own release build (its build-release script), with node_modules/.bin first on PATH
// so that node-gyp and the gyp file's `node` calls run on this Node. npm names its node-gyp.
const nodeGyp = process.env.npm_config_node_gyp;
if (!nodeGyp) fail('run it through npm (npm run prepare) so that npm names its node-gyp (npm_config_node_gyp)');
const build = spawnSync(
  process.execPath,
  [nodeGyp, 'rebuild', '--release', '--force_build=1', `--nodedir=${nodedir}`],
  {
    cwd: join(root, 'node_modules/better-sqlite3'),
    stdio: 'inherit',
    env: { ...process.env, npm_config_nodedir: nodedir, PATH: `${dirname(projectNode)}:${process.env.PATH}` },
  },
);
if (build.status !== 0) fail(`node-gyp rebuild of better-sqlite3 failed (exit ${build.status ?? build.signal})`);
const after = loadError();
if (after !== undefined)
  fail(`better-sqlite3 still does not load on Node.js ${process.version} after compiling it:\n${after}`);
console.error(`native addons: better-sqlite3 compiled for Node.js ${process.version}`);
