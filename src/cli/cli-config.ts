import { resolve } from 'node:path';
import { envWithDotenv, loadConfig, type Config } from '../config.js';
import { applyHeapGrowth } from '../heap-growth.js';

/**
 * The configuration of a CLI command: the environment, over a `.env` file in the working folder if
 * there is one. Also applies the process-wide settings it holds (heap growth), since every command
 * starts here.
 */
export async function cliConfig(): Promise<Config> {
  const config = loadConfig(await envWithDotenv(process.env, resolve('.env')));
  applyHeapGrowth(config.heapGrowthPercent);
  return config;
}
