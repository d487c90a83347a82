// ESLint over the code (src, test, ui, bench, bin, scripts): typescript-eslint's recommended rules for TypeScript,
// ESLint's recommended rules for the CommonJS scripts; formatting is Prettier's (eslint-config-prettier turns off
// the rules it owns). Rules that do not fit this codebase are off below, each with its reason.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import regexp from 'eslint-plugin-regexp';
import tseslint from 'typescript-eslint';

// Node's own globals and CommonJS's, as the scripts see them (no extra package for a list of names).
const nodeGlobals = Object.fromEntries(
  [...Object.getOwnPropertyNames(globalThis), 'require', 'module', 'exports', '__dirname', '__filename'].map((n) => [
    n,
    'readonly',
  ]),
);

const unusedOptions = {
  // A leading underscore marks a value left unused on purpose (an argument of a fixed signature, a field left out).
  argsIgnorePattern: '^_',
  varsIgnorePattern: '^_',
  caughtErrors: 'none',
  ignoreRestSiblings: true,
};

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'src/generated/', 'coverage/', 'test-artifacts/', '.ab-*/', 'data/'] },
  {
    files: ['**/*.ts', '**/*.tsx'],
    extends: [js.configs.recommended, ...tseslint.configs.recommended],
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', unusedOptions],
      // Optional heavy modules (sharp, the AWS SDK, native BLAKE3) and CommonJS scripts are loaded with require() when
      // first needed, so they stay off the start path.
      '@typescript-eslint/no-require-imports': 'off',
      // `cond ? a() : b()` as a statement is used for two-way side effects.
      '@typescript-eslint/no-unused-expressions': ['error', { allowTernary: true, allowShortCircuit: true }],
    },
  },
  {
    files: ['**/*.cjs', '**/*.js', '**/*.mjs'],
    extends: [js.configs.recommended],
    languageOptions: { sourceType: 'commonjs', globals: nodeGlobals },
    rules: { 'no-unused-vars': ['error', unusedOptions] },
  },
  { files: ['**/*.mjs'], languageOptions: { sourceType: 'module' } },
  {
    // No expression may backtrack super-linearly: request data reaches many of them, and one that does blocks the
    // event loop for every client (a 100-character mime_type once froze an instance). The patterns of the TypeBox
    // schemas and openapi.yaml, which are strings this plugin cannot see, are checked by scripts/check-patterns.cjs.
    // Tests and benchmarks only match their own output, so they are left out.
    files: ['src/**', 'ui/**', 'bin/**', 'scripts/**'],
    plugins: { regexp },
    rules: {
      'regexp/no-super-linear-backtracking': 'error',
      'regexp/no-super-linear-move': ['error', { ignoreSticky: false, ignorePartial: false }],
    },
  },
  {
    // The input rules, file names and terminal output match control characters on purpose (NUL, C0, escapes).
    rules: { 'no-control-regex': 'off' },
  },
  {
    // Tests read untyped JSON answers and the page's globals in page.evaluate; `any` there is deliberate.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // pg's overloaded query() and connect() can only be overridden with `any` signatures.
    files: ['src/infra/prisma.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // The functions this benchmark passes to page.evaluate run in the browser.
    files: ['bench/grid.cjs', 'bench/figures/grid.cjs'],
    languageOptions: {
      globals: { document: 'readonly', requestAnimationFrame: 'readonly', sessionStorage: 'readonly' },
    },
  },
  prettier,
);
