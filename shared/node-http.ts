/**
 * `node:http` as its CommonJS module, for every module here that needs it. An ESM `import` of it
 * makes Node build the builtin's ESM face by reading each of its exports, and some of them
 * (`http.WebSocket` and its event classes) are getters that load Node's bundled fetch client
 * (undici, with the web streams it needs): close to a megabyte of source and its compiled code held
 * at rest by a service that never calls them. `process.getBuiltinModule` hands the module as
 * `require` would, reading nothing (`tests/unit/runtime/node-http.test.ts`).
 */
export const http = process.getBuiltinModule('node:http');
