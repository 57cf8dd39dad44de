import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.stack/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // console is for the CLI's user-facing output only; everything else logs through src/log.ts.
      'no-console': 'error',
    },
  },
  { files: ['src/cli/**', 'bin/**', 'bench/**'], rules: { 'no-console': 'off' } },
);
