/**
 * Source-mapped stack traces for the service's own code, not for the packages under node_modules:
 * `npm start` loads this first (`node --import=./dist/services/runtime/source-maps.js`), since a
 * module's map is read when the module loads. `--enable-source-maps` also kept the maps the
 * packages ship (OpenTelemetry's among them) for traces that point into them: about 3 MB of what a
 * fresh process holds at rest (docs/performance.md, "Memory").
 */
import { setSourceMapsSupport } from 'node:module';

setSourceMapsSupport(true, { nodeModules: false, generatedCode: false });
