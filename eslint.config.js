// One lint configuration for the whole tree: typescript-eslint's type-checked rules on every
// TypeScript file (services/, shared/, tests/), the recommended JavaScript rules on the rest.
// Formatting is Prettier's job (.prettierrc.json); nothing here restates it.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'data/', 'docker/kafka/.lib/', 'docker/kafka/.run/'] },
  js.configs.recommended,
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // An adapter's async method that has nothing to await still implements a promise-returning
      // port; making it return Promise.resolve() by hand would say the same thing less clearly.
      '@typescript-eslint/require-await': 'off',
      // A leading underscore marks what a signature or a destructuring must name but does not use.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // Template literals in messages print numbers, booleans and arrays as anyone would expect.
      '@typescript-eslint/restrict-template-expressions': [
        'error',
        { allowNumber: true, allowBoolean: true, allowArray: true, allowNullish: true, allowNever: true },
      ],
      // A caught value or an AbortSignal's reason is passed on as it came: that is not a choice to
      // reject with a non-Error.
      '@typescript-eslint/prefer-promise-reject-errors': [
        'error',
        { allowThrowingAny: true, allowThrowingUnknown: true },
      ],
      '@typescript-eslint/only-throw-error': ['error', { allowThrowingAny: true, allowThrowingUnknown: true }],
      // node:test's test() and describe() return promises the runner itself awaits.
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            {
              from: 'package',
              package: 'node:test',
              name: ['test', 'it', 'describe', 'suite', 'before', 'after', 'beforeEach', 'afterEach'],
            },
          ],
        },
      ],
    },
  },
  {
    // The service takes node:http from shared/node-http.ts: an ESM import of it loads Node's
    // bundled fetch client for nothing (see that file). Types may still be imported.
    files: ['services/**/*.ts', 'shared/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: 'node:http',
              message: "take node:http from shared/node-http.ts (an ESM import of it loads Node's fetch client)",
              allowTypeImports: true,
            },
          ],
        },
      ],
      // Type.Record(Type.String(), …) matches keys with `^(.*)$`, which no key holding a line break
      // matches: shared/domain/any-key-record.ts says what went wrong, and is the one to use.
      'no-restricted-syntax': [
        'error',
        {
          selector: "CallExpression[callee.object.name='Type'][callee.property.name='Record']",
          message: 'use AnyKeyRecord (shared/domain/any-key-record.ts): a key with a line break matches no `^(.*)$`',
        },
      ],
    },
  },
  {
    files: ['shared/domain/any-key-record.ts'],
    rules: { 'no-restricted-syntax': 'off' },
  },
  {
    // Tests read JSON answers, database rows and broker records whose shape is what they check:
    // values typed `any` there are the data under test, asserted field by field.
    files: ['tests/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    files: ['tests/run.mjs', 'scripts/**/*.mjs', 'eslint.config.js'],
    languageOptions: { globals: globals.node },
  },
  {
    files: ['services/console/**/*.js'],
    languageOptions: { globals: globals.browser },
  },
);
