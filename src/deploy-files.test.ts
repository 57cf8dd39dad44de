import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { COMMAND_SETTINGS, describeOptions, type CommandName } from './config.js';
import { packageRoot } from './package-root.js';

/**
 * The deployment examples (docker-compose.yml, deploy/kubernetes/) against the code they deploy:
 * every setting they give a component is one that component reads (a misspelt name would be
 * ignored silently), the probes ask the ports the components listen on, the enricher's volume is
 * where the image keeps its heads, and the grace periods outlast the drain. The image itself is
 * built and run by test/integration/container-image.test.ts.
 */
const read = (path: string) => readFileSync(join(packageRoot, path), 'utf8');
/** The longest drain after SIGTERM before the loader gives up (src/lifecycle.ts). */
const DRAIN_LIMIT_S = 30;

const readBy = (command: string) => new Set(describeOptions(command as CommandName).map((o) => o.env));
const declared = new Set(describeOptions().map((o) => o.env));
const defaultOf = (env: string) => describeOptions().find((o) => o.env === env)?.default;

const imageStateDir = /ENRICHER_STATE_DIR=(\S+)/.exec(read('Dockerfile'))?.[1];

interface ComposeService {
  image?: string;
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  healthcheck?: { test: string[] };
  stop_grace_period?: string;
  depends_on?: Record<string, { condition: string }>;
}

describe('docker-compose.yml', () => {
  const compose = parse(read('docker-compose.yml'), { merge: true }) as { services: Record<string, ComposeService> };
  const loader = Object.entries(compose.services).filter(([, s]) => s.image === 'billing-loader:local');

  it('runs the image for migrate, ingress, enricher, sink and dashboard, each with a command of the CLI', () => {
    expect(loader.map(([name, s]) => [name, s.command?.[0]])).toEqual([
      ['migrate', 'migrate'], ['ingress', 'ingress'], ['enricher', 'enricher'], ['sink', 'sink'], ['dashboard', 'dashboard'],
    ]);
    for (const [, s] of loader) expect(Object.keys(COMMAND_SETTINGS)).toContain(s.command?.[0]);
  });

  it('gives each component only settings that component reads', () => {
    for (const [name, s] of loader) {
      const reads = readBy(s.command?.[0] as string);
      for (const env of Object.keys(s.environment ?? {})) expect(reads, `${name}: ${env}`).toContain(env);
    }
  });

  it('starts the stages only after migrate completed, and gives them more than the drain to stop', () => {
    for (const [name, s] of loader.filter(([n]) => n !== 'migrate')) {
      expect(s.depends_on?.migrate?.condition, name).toBe('service_completed_successfully');
      expect(Number.parseInt(s.stop_grace_period ?? '10', 10), name).toBeGreaterThan(DRAIN_LIMIT_S);
    }
  });

  it("probes each component's /readyz on the port it listens on", () => {
    const portSetting: Record<string, string> = { ingress: 'INGRESS_PORT', enricher: 'ENRICHER_PORT', sink: 'SINK_PORT', dashboard: 'DASHBOARD_PORT' };
    for (const [name, setting] of Object.entries(portSetting)) {
      const s = compose.services[name] as ComposeService;
      const port = s.environment?.[setting] ?? s.environment?.OPS_PORT ?? defaultOf(setting);
      expect(s.healthcheck?.test.join(' '), name).toContain(`http://127.0.0.1:${port}/readyz`);
    }
  });

  it("keeps the enricher's heads on a volume where the image keeps them", () => {
    expect(imageStateDir).toBeDefined();
    expect(compose.services.enricher?.volumes?.map((v) => v.split(':')[1])).toContain(imageStateDir);
  });
});

interface Container {
  args: string[];
  envFrom?: ({ configMapRef?: { name: string } } & { secretRef?: { name: string } })[];
  env?: { name: string; value: string }[];
  ports?: { name: string; containerPort: number }[];
  volumeMounts?: { name: string; mountPath: string }[];
  lifecycle?: { preStop?: { sleep?: { seconds: number } } };
  readinessProbe?: { httpGet: { path: string; port: string } };
  livenessProbe?: { httpGet: { path: string; port: string } };
  startupProbe?: { httpGet: { path: string; port: string } };
}
interface Manifest {
  kind: string;
  metadata: { name: string };
  data?: Record<string, string>;
  stringData?: Record<string, string>;
  spec?: { template: { spec: { terminationGracePeriodSeconds?: number; containers: Container[] } } };
}

describe('deploy/kubernetes', () => {
  const dir = join(packageRoot, 'deploy', 'kubernetes');
  const manifests = readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .flatMap((f) => parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => d.toJS() as Manifest));
  const byKind = (kind: string) => manifests.filter((m) => m.kind === kind);
  const configMaps = new Map(byKind('ConfigMap').map((m) => [m.metadata.name, m.data ?? {}]));
  const secrets = new Map(byKind('Secret').map((m) => [m.metadata.name, m.stringData ?? {}]));
  const workloads = manifests.filter((m) => ['Deployment', 'StatefulSet', 'Job'].includes(m.kind));

  it('has a Job for migrate, Deployments for ingress and sink, a StatefulSet for the enricher', () => {
    expect(workloads.map((w) => [w.kind, w.spec?.template.spec.containers[0]?.args[0]]).sort()).toEqual([
      ['Deployment', 'ingress'], ['Deployment', 'sink'], ['Job', 'migrate'], ['StatefulSet', 'enricher'],
    ]);
  });

  it('names only declared settings, and gives each component its own secrets only if it reads them', () => {
    for (const data of configMaps.values()) for (const env of Object.keys(data)) expect(declared, env).toContain(env);
    for (const w of workloads) {
      const c = w.spec?.template.spec.containers[0] as Container;
      const reads = readBy(c.args[0] as string);
      const own = [...(c.env ?? []).map((e) => e.name), ...(c.envFrom ?? []).flatMap((f) => (f.secretRef ? Object.keys(secrets.get(f.secretRef.name) ?? { missing: '' }) : []))];
      for (const env of own) expect(reads, `${w.metadata.name}: ${env}`).toContain(env);
    }
  });

  it('probes the ops port the ConfigMap sets, and gives more grace than the preStop sleep and the drain', () => {
    const opsPort = Number([...configMaps.values()].find((d) => d.OPS_PORT)?.OPS_PORT);
    for (const w of workloads.filter((m) => m.kind !== 'Job')) {
      const spec = w.spec?.template.spec;
      const c = spec?.containers[0] as Container;
      expect(c.ports?.find((p) => p.name === 'ops')?.containerPort, w.metadata.name).toBe(opsPort);
      expect([c.readinessProbe?.httpGet, c.livenessProbe?.httpGet, c.startupProbe?.httpGet], w.metadata.name).toEqual([
        { path: '/readyz', port: 'ops' }, { path: '/healthz', port: 'ops' }, { path: '/healthz', port: 'ops' },
      ]);
      const preStop = c.lifecycle?.preStop?.sleep?.seconds ?? 0;
      expect(spec?.terminationGracePeriodSeconds, w.metadata.name).toBeGreaterThan(preStop + DRAIN_LIMIT_S);
    }
  });

  it("mounts the enricher's volume where its ENRICHER_STATE_DIR and the image's point", () => {
    const enricher = byKind('StatefulSet')[0]?.spec?.template.spec.containers[0] as Container;
    const stateDir = enricher.env?.find((e) => e.name === 'ENRICHER_STATE_DIR')?.value;
    expect(stateDir).toBe(imageStateDir);
    expect(enricher.volumeMounts?.map((m) => m.mountPath)).toContain(stateDir);
  });
});
