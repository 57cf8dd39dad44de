import { execFile, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { packageRoot } from '../../src/package-root.js';

/** The dbt package the analysts use (analytics/dbt) and its pinned dbt and MetricFlow. */
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
  /** MetricFlow's `mf` (dbt-metricflow), from the same environment. */
  mf: string;
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
  const mf = join(venvDir, 'bin', 'mf');
  if (existsSync(stampFile) && (await readFile(stampFile, 'utf8')).trim() === wanted && existsSync(dbt) && existsSync(mf)) return { dbt, mf, installMs: 0 };
  const started = Date.now();
  await rm(venvDir, { recursive: true, force: true });
  await mkdir(join(packageRoot, '.cache'), { recursive: true });
  await run('python3', ['-m', 'venv', venvDir]);
  // --no-compile: byte-compiling every installed module took most of the install on a loaded
  // machine; Python compiles the modules dbt imports on first use instead.
  await run(join(venvDir, 'bin', 'pip'), ['install', '--disable-pip-version-check', '--no-input', '--quiet', '--no-compile', '-r', requirementsFile]);
  await writeFile(stampFile, `${wanted}\n`);
  return { dbt, mf, installMs: Date.now() - started };
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
 * Runs one dbt command on a project (the package itself unless `projectDir` names another, such
 * as a host project that installs it) with the given profile and output folders (temporary
 * folders of the test, so that the repository tree stays clean). Resolves with the exit code:
 * a failing dbt run is a result to inspect, not an exception. run_results.json is removed first,
 * so that a command that runs nothing is not read with an earlier command's results.
 */
export async function runDbt(dbt: string, args: string[], dirs: DbtDirs, projectDir = dbtProjectDir): Promise<DbtRun> {
  // `dbt deps` writes no artifacts and refuses --target-path.
  const target = args[0] === 'deps' ? [] : ['--target-path', dirs.targetPath];
  const argv = [...args, '--project-dir', projectDir, '--profiles-dir', dirs.profilesDir, ...target, '--log-path', dirs.logPath];
  const resultsFile = join(dirs.targetPath, 'run_results.json');
  await rm(resultsFile, { force: true });
  const { code, output } = await exec(dbt, argv, { cwd: projectDir, env: dbtEnv(dirs.profilesDir, projectDir) });
  const results = existsSync(resultsFile) ? (JSON.parse(await readFile(resultsFile, 'utf8')) as RunResults) : undefined;
  return { code, output, results };
}

/**
 * Runs MetricFlow's `mf query` in a dbt project whose `target/semantic_manifest.json` a `dbt
 * build` or `dbt parse` wrote (mf reads it from there only), and resolves with the rows of the
 * CSV it writes, each column as text ('' for null).
 */
export async function mfQuery(mf: string, projectDir: string, profilesDir: string, args: string[]): Promise<{ code: number; output: string; rows: Array<Record<string, string>> }> {
  const csv = join(projectDir, `mf-${process.pid}-${Date.now()}.csv`);
  const { code, output } = await exec(mf, ['query', ...args, '--csv', csv], { cwd: projectDir, env: dbtEnv(profilesDir, projectDir) });
  if (code !== 0 || !existsSync(csv)) return { code: code || 1, output, rows: [] };
  // mf's CSV holds dates and numbers only: no quoting to undo.
  const [header, ...lines] = (await readFile(csv, 'utf8')).trim().split(/\r?\n/);
  const names = header!.split(',');
  const rows = lines.map((line) => Object.fromEntries(line.split(',').map((v, i) => [names[i]!, v])));
  return { code, output, rows };
}

function dbtEnv(profilesDir: string, projectDir: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    // No calls home from a test run: no usage statistics, no version check.
    DBT_SEND_ANONYMOUS_USAGE_STATS: 'false',
    DBT_VERSION_CHECK: 'false',
    DBT_USE_COLORS: 'false',
    // mf has no --profiles-dir or --project-dir: it reads these.
    DBT_PROFILES_DIR: profilesDir,
    DBT_PROJECT_DIR: projectDir,
  };
}

function exec(cmd: string, args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv }): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { ...opts, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const status = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code: status, output: `${stdout}${stderr}` });
    });
  });
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

/**
 * A dbt project of a team that adopts the package (`analytics_host`, profile `billing_loader`):
 * its packages.yml holds `packageEntry` (the YAML of one entry, as docs/ANALYSTS.md shows it) and
 * its dbt_project.yml sets the package's vars under the package's name.
 */
export async function writeHostProject(dir: string, packageEntry: string, vars: Record<string, string | number>): Promise<void> {
  await mkdir(dir, { recursive: true });
  const varLines = Object.entries(vars).map(([k, v]) => `    ${k}: ${JSON.stringify(v)}`);
  await writeFile(join(dir, 'dbt_project.yml'), ['name: analytics_host', 'version: 1.0.0', 'config-version: 2', 'profile: billing_loader', 'vars:', '  billing_loader:', ...varLines, ''].join('\n'));
  await writeFile(join(dir, 'packages.yml'), `packages:\n${packageEntry}\n`);
}
