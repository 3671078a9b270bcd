import { openEmbeddedBackends } from '../../support/embedded-backends.ts';
import { historySuite } from './history-suite.ts';

historySuite('embedded (SQLite)', async () => openEmbeddedBackends());
