import { openEmbeddedBackends } from '../../support/embedded-backends.ts';
import { poisonSuite } from './poison-suite.ts';

poisonSuite('embedded (SQLite)', async () => openEmbeddedBackends());
