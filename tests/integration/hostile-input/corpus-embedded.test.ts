import { openEmbeddedBackends } from '../../support/embedded-backends.ts';
import { corpusSuite } from './corpus-suite.ts';

// The embedded default: nothing configured, everything in one SQLite database.
corpusSuite('embedded (SQLite)', async () => openEmbeddedBackends());
