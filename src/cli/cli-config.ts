import { resolve } from 'node:path';
import { envWithDotenv, loadConfig, type Config } from '../config.js';

/** The configuration of a CLI command: the environment, over a `.env` file in the working folder if there is one. */
export async function cliConfig(): Promise<Config> {
  return loadConfig(await envWithDotenv(process.env, resolve('.env')));
}
