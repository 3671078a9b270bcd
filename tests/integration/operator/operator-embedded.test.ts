import { openEmbeddedBackends } from '../../support/embedded-backends.ts';
import { operatorSuite } from './operator-suite.ts';

operatorSuite('embedded (SQLite)', async () => openEmbeddedBackends());
