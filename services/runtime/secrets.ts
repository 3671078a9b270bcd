/**
 * The admin token, the API-key hash secret and the data key secret. From the environment when set; on the embedded
 * default, generated once into DATA_DIR (mode 0600) and reused; on a shared database they must be
 * configured, since every process has to agree on them.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Config, ConfigError } from '../../shared/config.ts';

export interface Secrets {
  adminToken: string;
  apiKeySecret: string;
  /** Files generated or read, for the start-up log (never the values). */
  files: { adminToken?: string; apiKeySecret?: string };
}

const fromFile = (path: string): string => {
  if (existsSync(path)) return readFileSync(path, 'utf8').trim();
  const value = randomBytes(32).toString('base64url');
  writeFileSync(path, `${value}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(path, 0o600);
  return value;
};

/**
 * Refuses, before anything starts, a configuration whose secrets cannot be resolved: on a shared
 * database both must be set (otherwise a processor would already be consuming when the ingress
 * fails on them).
 */
export const checkSecrets = (config: Config): void => {
  if (!config.databaseUrl) return;
  for (const [value, variable] of [
    [config.adminToken, 'ADMIN_TOKEN'],
    [config.apiKeySecret, 'API_KEY_SECRET'],
    [config.dataKeySecret, 'DATA_KEY_SECRET'],
  ] as const) {
    if (!value)
      throw new ConfigError(
        `${variable} must be set when the service runs on a shared database (DATABASE_URL): every process needs the same value`,
      );
  }
};

export const resolveSecrets = (config: Config, dataDir: string | undefined): Secrets => {
  const resolve = (value: string | undefined, variable: string, file: string): [string, string | undefined] => {
    if (value) return [value, undefined];
    if (!dataDir)
      throw new ConfigError(
        `${variable} must be set when the service runs on a shared database (DATABASE_URL): every process needs the same value`,
      );
    const path = join(dataDir, file);
    return [fromFile(path), path];
  };
  const [adminToken, adminFile] = resolve(config.adminToken, 'ADMIN_TOKEN', 'admin-token');
  const [apiKeySecret, secretFile] = resolve(config.apiKeySecret, 'API_KEY_SECRET', 'api-key-secret');
  return { adminToken, apiKeySecret, files: { adminToken: adminFile, apiKeySecret: secretFile } };
};

/**
 * The secret the per-call data keys are wrapped under (docs/decisions/0014-erasure-crypto-shredding.md):
 * DATA_KEY_SECRET, else on the embedded default DATA_DIR/data-key-secret, generated once (mode 0600).
 * Losing it makes every stored personal field unreadable.
 */
export const resolveDataKeySecret = (
  config: Config,
  dataDir: string | undefined,
): { secret: string; file?: string } => {
  if (config.dataKeySecret) return { secret: config.dataKeySecret };
  if (!dataDir)
    throw new ConfigError(
      'DATA_KEY_SECRET must be set when the service runs on a shared database (DATABASE_URL): every process needs the same value',
    );
  const path = join(dataDir, 'data-key-secret');
  return { secret: fromFile(path), file: path };
};
