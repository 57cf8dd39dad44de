import { describeOptions } from '../config.js';

/** The configuration table for `--help` of commands that read the environment. */
export function environmentHelp(variables: string[]): string {
  const rows = describeOptions().filter((o) => variables.includes(o.env));
  const width = Math.max(...rows.map((r) => r.env.length));
  return ['', 'Environment (a .env file in the working folder may supply these):', ...rows.map((r) => `  ${r.env.padEnd(width)}  ${r.description} (default: ${r.default})`)].join('\n');
}
