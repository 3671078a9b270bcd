/** The erasure proof on the embedded default: every byte of every file under DATA_DIR is searched. */
import Database from 'better-sqlite3';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../../support/temp-dir.ts';
import { erasureProof } from './erasure-suite.ts';

const filesUnder = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });

const filesHolding = (dir: string, needles: string[]): string[] => {
  const found: string[] = [];
  for (const file of filesUnder(dir)) {
    const bytes = readFileSync(file);
    for (const needle of needles) {
      for (const encoding of ['utf8', 'utf16le'] as const)
        if (bytes.includes(Buffer.from(needle, encoding))) found.push(`${file}: ${needle} (${encoding})`);
    }
  }
  return found;
};

erasureProof('embedded default (SQLite)', async () => {
  const dir = tempDir('erasure-');
  const dataDir = join(dir.path, 'data');
  return {
    // DATA_KEY_SECRET unset: generated into DATA_DIR like the other secrets.
    env: { DATA_DIR: dataDir, DATA_KEY_SECRET: '', DATABASE_URL: '', KAFKA_BROKERS: '', REDIS_URL: '' },
    topicPrefix: '',
    async storageHolding(needles) {
      // The service has stopped; whatever WAL is left goes into the database file first.
      const db = new Database(join(dataDir, 'calls.sqlite'));
      db.pragma('wal_checkpoint(TRUNCATE)');
      db.close();
      return filesHolding(dataDir, needles);
    },
    // Every file as it is, the WAL included: what a backup taken now, or a kill -9, would leave.
    storageHoldingWhileRunning: async (needles) => filesHolding(dataDir, needles),
    cleanup: async () => dir.remove(),
  };
});
