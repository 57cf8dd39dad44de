import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isOurs, portInUse, readPid, removeFile, runCommand, spawnDetached, stopProcess, waitUntil } from './processes.js';
import type { StackService } from './service.js';

/**
 * Apicurio Registry 3.0 (the last line that runs on Java 17), serving the Confluent-compatible
 * API at /apis/ccompat/v7. Its storage is an H2 database *file* under the stack folder: the
 * default in-memory store would forget schema ids on restart, and every record in Kafka names
 * its schema by id, so a forgetful registry would make the whole log undecodable.
 */
export const APICURIO_VERSION = '3.0.9';

export function registryService(stackDir: string, port: number): StackService {
  const dir = join(stackDir, 'registry');
  const dist = join(dir, 'dist');
  const data = join(dir, 'data');
  const pidFile = join(dir, 'registry.pid');
  const logFile = join(dir, 'registry.log');
  const installedStamp = join(dist, '.installed');
  const baseUrl = `http://127.0.0.1:${port}/apis/ccompat/v7`;

  const runnerJar = () => {
    const jar = readdirSync(dist).find((f) => f.endsWith('-runner.jar'));
    if (!jar) throw new Error(`no *-runner.jar in ${dist}; remove ${dist} and run stack up again`);
    return join(dist, jar);
  };

  return {
    name: 'schema-registry',
    port,
    logFile,
    async install(progress) {
      if (existsSync(installedStamp) && readFileSync(installedStamp, 'utf8') === APICURIO_VERSION) return;
      progress(`schema-registry: downloading Apicurio Registry ${APICURIO_VERSION} from Maven Central (first run only)`);
      const download = join(dir, 'download');
      mkdirSync(download, { recursive: true });
      mkdirSync(dist, { recursive: true });
      await runCommand('mvn', ['-q', '-B', 'dependency:copy', `-Dartifact=io.apicurio:apicurio-registry-app:${APICURIO_VERSION}:tar.gz:all`, `-DoutputDirectory=${download}`]);
      await runCommand('tar', ['xzf', join(download, `apicurio-registry-app-${APICURIO_VERSION}-all.tar.gz`), '-C', dist]);
      removeFile(join(download, `apicurio-registry-app-${APICURIO_VERSION}-all.tar.gz`));
      writeFileSync(installedStamp, APICURIO_VERSION);
    },
    runningPid: () => {
      const pid = readPid(pidFile);
      return isOurs(pid, dir) ? pid : undefined;
    },
    async start() {
      mkdirSync(data, { recursive: true });
      await spawnDetached(
        'java',
        [
          '-Xms128m',
          '-Xmx384m',
          `-Dquarkus.http.port=${port}`,
          '-Dquarkus.http.host=127.0.0.1',
          `-Dapicurio.datasource.url=jdbc:h2:file:${join(data, 'registry')}`,
          '-Dapicurio.datasource.username=sa',
          '-Dapicurio.datasource.password=sa',
          // Without a global rule the ccompat API accepts any change; BACKWARD is Confluent's default.
          '-Dapicurio.rules.global.compatibility=BACKWARD',
          '-jar',
          runnerJar(),
        ],
        { cwd: dir, logFile, pidFile },
      );
    },
    async waitReady(timeoutMs) {
      await waitUntil(async () => {
        if (!(await portInUse(port))) throw new Error(`schema registry is not listening on ${port}`);
        const res = await fetch(`${baseUrl}/subjects`, { signal: AbortSignal.timeout(2000) });
        if (!res.ok) throw new Error(`schema registry answered HTTP ${res.status}`);
      }, timeoutMs, 500);
    },
    async stop() {
      const pid = this.runningPid();
      if (pid !== undefined) await stopProcess(pid, 15_000);
      removeFile(pidFile);
    },
  };
}
