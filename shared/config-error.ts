/**
 * How a bad configuration value is told: one line naming the variable, the text it held and what it
 * must hold (README, "Running on Kafka + PostgreSQL"). A secret's value is never shown, and a URL's
 * password is masked: the line goes to stderr and into whatever collects it.
 */
import type { TSchema } from '@sinclair/typebox';

/** A variable is missing or malformed; the message names it. */
export class ConfigError extends Error {
  readonly code = 'CONFIG_INVALID';
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** Variables whose whole value is a secret: a message names them and never shows what they hold. */
const SECRET_VARIABLES: ReadonlySet<string> = new Set([
  'ADMIN_TOKEN',
  'METRICS_TOKEN',
  'API_KEY_SECRET',
  'DATA_KEY_SECRET',
  'TRANSCRIBE_API_KEY',
  'ANALYSE_API_KEY',
]);

/** `scheme://user:password@host…` with the password replaced by `***` (postgres://app:***@db:5432/calls). */
export const maskPassword = (text: string): string => text.replace(/(\/\/[^:@/\s]*:)[^@\s]*@/g, '$1***@');

/**
 * The error for a variable whose value is not valid: `HOST="999.1.1.1" is not valid: <reason>;
 * expected <what it must hold>`. `value` is the text the variable held (undefined: not shown).
 */
export const invalidVariable = (
  variable: string,
  value: string | undefined,
  expected: string,
  reason?: string,
): ConfigError => {
  const shown =
    value === undefined
      ? ''
      : SECRET_VARIABLES.has(variable)
        ? ' (its value not shown)'
        : `=${JSON.stringify(maskPassword(value))}`;
  return new ConfigError(
    `invalid configuration: ${variable}${shown} is not valid: ${reason ? `${reason}; ` : ''}expected ${expected}`,
  );
};

/** What a variable must hold, in words: its schema's own `expected`, or read off its type and bounds. */
const expectedOf = (schema: TSchema): string => {
  if (typeof schema.expected === 'string') return schema.expected;
  if (schema.type === 'integer')
    return schema.maximum === undefined
      ? `a whole number, ${schema.minimum} or more`
      : `a whole number from ${schema.minimum} to ${schema.maximum}`;
  if (schema.type === 'array') return `a comma-separated list, each ${expectedOf(schema.items as TSchema)}`;
  if (schema.type === 'boolean') return 'true or false';
  if (Array.isArray(schema.anyOf))
    return `one of ${(schema.anyOf as TSchema[]).map((s) => String(s.const)).join(', ')}`;
  if (schema.type === 'string' && (schema.minLength ?? 0) > 1) return `at least ${schema.minLength} characters`;
  if (schema.type === 'string' && schema.description === undefined) return 'text that is not empty';
  return String(schema.description).replace(/^[A-Z0-9_]+:\s*/, '');
};

/** The variable a field of the schema is read from: its description starts with the name. */
const variableOf = (schema: TSchema): string => /^[A-Z0-9_]+/.exec(String(schema.description))![0];

/** The error for a field of the configuration schema whose variable's text is not valid. */
export const invalidField = (schema: TSchema, env: Record<string, string | undefined>): ConfigError =>
  invalidVariable(variableOf(schema), env[variableOf(schema)], expectedOf(schema));
