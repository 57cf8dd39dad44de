import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // .cache/: the dbt package's Python venv (test/helpers/dbt.ts), which ships JavaScript of its own.
  { ignores: ['dist/', 'node_modules/', '.stack/', 'coverage/', '.cache/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: Object.fromEntries(
        ['process', 'console', 'URL', 'Buffer', 'AbortController', 'AbortSignal', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'setImmediate'].map((g) => [g, 'readonly']),
      ),
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // console is for the CLI's user-facing output only; everything else logs through src/log.ts.
      'no-console': 'error',
    },
  },
  { files: ['src/cli/**', 'bin/**', 'bench/**', 'tools/**'], rules: { 'no-console': 'off' } },
  // The dashboard's page script runs in the browser, beside chart.js's global.
  { files: ['dashboard/**/*.js'], languageOptions: { sourceType: 'script', globals: Object.fromEntries(['document', 'fetch', 'getComputedStyle', 'CustomEvent', 'Chart'].map((g) => [g, 'readonly'])) } },
);
