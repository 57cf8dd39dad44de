import { execFile, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { packageRoot } from '../../src/package-root.js';

/** The dbt package the analysts use (analytics/dbt) and its pinned dbt. */
export const dbtProjectDir = join(packageRoot, 'analytics', 'dbt');
const requirementsFile = join(dbtProjectDir, 'requirements.txt');
/** Gitignored; one per clone, reused while the requirements file is unchanged. */
const venvDir = join(packageRoot, '.cache', 'dbt-venv');
const stampFile = join(venvDir, '.requirements-sha256');

/** Whether this machine has a python3 to build dbt's environment with (the only reason to skip). */
export function pythonAvailable(): boolean {
  return spawnSync('python3', ['--version'], { stdio: 'ignore' }).status === 0;
}

export interface DbtInstall {
  /** The dbt executable. */
  dbt: string;
  /** Milliseconds spent creating the environment; 0 when an existing one was reused. */
  installMs: number;
}

/**
 * A virtual environment with the pinned dbt (analytics/dbt/requirements.txt), created with
 * `python3 -m venv` the first time and reused while the requirements file's hash matches the
 * stamp written after a complete install (a half-finished install has no stamp and is redone).
 */
export async function ensureDbt(): Promise<DbtInstall> {
  const wanted = createHash('sha256').update(await readFile(requirementsFile)).digest('hex');
  const dbt = join(venvDir, 'bin', 'dbt');
  if (existsSync(stampFile) && (await readFile(stampFile, 'utf8')).trim() === wanted && existsSync(dbt)) return { dbt, installMs: 0 };
  const started = Date.now();
  await rm(venvDir, { recursive: true, force: true });
  await mkdir(join(packageRoot, '.cache'), { recursive: true });
  await run('python3', ['-m', 'venv', venvDir]);
  // --no-compile: byte-compiling every installed module took most of the install on a loaded
  // machine; Python compiles the modules dbt imports on first use instead.
  await run(join(venvDir, 'bin', 'pip'), ['install', '--disable-pip-version-check', '--no-input', '--quiet', '--no-compile', '-r', requirementsFile]);
  await writeFile(stampFile, `${wanted}\n`);
  return { dbt, installMs: Date.now() - started };
}

export interface DbtRun {
  code: number;
  output: string;
  /** target/run_results.json of the run (absent when dbt failed before running anything). */
  results: RunResults | undefined;
}

export interface RunResults {
  results: Array<{ unique_id: string; status: string; failures: number | null; message: string | null }>;
}

export interface DbtDirs {
  profilesDir: string;
  targetPath: string;
  logPath: string;
}

/**
 * Runs one dbt command on the package with the given profile and output folders (temporary
 * folders of the test, so that the repository tree stays clean). Resolves with the exit code:
 * a failing dbt run is a result to inspect, not an exception.
 */
export async function runDbt(dbt: string, args: string[], dirs: DbtDirs): Promise<DbtRun> {
  const argv = [...args, '--project-dir', dbtProjectDir, '--profiles-dir', dirs.profilesDir, '--target-path', dirs.targetPath, '--log-path', dirs.logPath];
  const env = {
    ...process.env,
    // No calls home from a test run: no usage statistics, no version check.
    DBT_SEND_ANONYMOUS_USAGE_STATS: 'false',
    DBT_VERSION_CHECK: 'false',
    DBT_USE_COLORS: 'false',
  };
  const { code, output } = await new Promise<{ code: number; output: string }>((resolve) => {
    execFile(dbt, argv, { env, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const status = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code: status, output: `${stdout}${stderr}` });
    });
  });
  const resultsFile = join(dirs.targetPath, 'run_results.json');
  const results = existsSync(resultsFile) ? (JSON.parse(await readFile(resultsFile, 'utf8')) as RunResults) : undefined;
  return { code, output, results };
}

/** A dbt profile (profiles.yml) named like the package's `profile:` for one PostgreSQL target. */
export function dbtProfile(databaseUrl: string, schema: string): string {
  const u = new URL(databaseUrl);
  const target = {
    type: 'postgres',
    host: u.hostname,
    port: Number(u.port || 5432),
    user: decodeURIComponent(u.username),
    password: decodeURIComponent(u.password),
    dbname: decodeURIComponent(u.pathname.slice(1)) || 'postgres',
    schema,
    threads: 2,
  };
  const lines = Object.entries(target).map(([k, v]) => `      ${k}: ${JSON.stringify(v)}`);
  return ['billing_loader:', '  target: test', '  outputs:', '    test:', ...lines, ''].join('\n');
}

function run(cmd: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${cmd} ${args.join(' ')} failed: ${err.message}\n${stdout}${stderr}`));
      else resolve();
    });
  });
}
