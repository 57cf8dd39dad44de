import { describeOptions, type CommandName } from '../config.js';

/** The configuration table for a command's `--help`: the settings that command reads (src/config.ts's COMMAND_SETTINGS). */
export function environmentHelp(command: CommandName): string {
  const rows = describeOptions(command);
  const width = Math.max(...rows.map((r) => r.env.length));
  return ['', 'Environment (a .env file in the working folder may supply these):', ...rows.map((r) => `  ${r.env.padEnd(width)}  ${r.description} (default: ${r.default})`)].join('\n');
}
