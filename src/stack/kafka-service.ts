import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EOS_RETRY, createKafka, defaultPartitioner, type KafkaOptions } from '../kafka/client.js';
import { silentLogger } from '../log.js';
import { DEFAULT_KAFKA_LINE, KAFKA_LINES, type KafkaLine } from './kafka-lines.js';
import { isOurs, portInUse, readPid, removeFile, runCommand, spawnDetached, stopProcess, tailOf, waitUntil, WaitAbandoned } from './processes.js';
import type { StackService } from './service.js';

export interface KafkaServiceOptions {
  /** The release line to run (default: the newest). */
  line?: KafkaLine;
  /**
   * The client listener speaks SASL_SSL with SCRAM-SHA-512 instead of PLAINTEXT; a CA, a broker
   * certificate and two users (`admin`, super user; `billing-loader`) are made at first start
   * (see secureKafkaAccess).
   */
  secure?: boolean;
  /** With `secure`: the StandardAuthorizer, and no access without an ACL except for `admin`. */
  acls?: boolean;
  /** Further `server.properties` lines (`name=value`), after the stack's own; for tests of broker behaviour. */
  brokerSettings?: string[];
}

/** What a client needs to reach a secured stack broker: the CA, and the users made at format time. */
export interface SecureKafkaAccess {
  caFile: string;
  admin: { username: string; password: string };
  loader: { username: string; password: string };
}

/** Where the jars of `line` are kept under a stack folder (downloaded once, shared by private brokers). */
export function kafkaLibsDir(stackDir: string, line: KafkaLine = DEFAULT_KAFKA_LINE): string {
  return join(stackDir, 'kafka', line.name, 'libs');
}

/** The CA and users of the secured broker of `stackDir`; undefined before its first secured start. */
export function secureKafkaAccess(stackDir: string): SecureKafkaAccess | undefined {
  const file = join(stackDir, 'kafka', 'tls', 'access.json');
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as SecureKafkaAccess) : undefined;
}

/**
 * The line of the stack's running broker, read from its command line (its libs folder);
 * 'unknown' for a broker of ours started from an older layout, undefined when none runs.
 */
export function runningKafkaLine(stackDir: string): KafkaLine | 'unknown' | undefined {
  const dir = join(stackDir, 'kafka');
  const pid = readPid(join(dir, 'kafka.pid'));
  if (!isOurs(pid, dir)) return undefined;
  let cmdline: string;
  try {
    cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return 'unknown';
  }
  return KAFKA_LINES.find((l) => cmdline.includes(kafkaLibsDir(stackDir, l))) ?? 'unknown';
}

/** Downloads the jars of `line` into the stack folder unless the same pom resolved them before. */
export async function installKafkaLine(stackDir: string, line: KafkaLine, progress: (line: string) => void): Promise<void> {
  const libs = kafkaLibsDir(stackDir, line);
  const stamp = join(libs, '.installed');
  const pom = readFileSync(line.pom, 'utf8');
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === pom) return;
  progress(`kafka: resolving Kafka ${line.version} jars from Maven Central (first run only)`);
  // Resolved aside and moved in whole: test runs started together may install the same line at
  // once, and a broker must never start from a half-copied folder.
  const staging = `${libs}.${randomUUID()}.tmp`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  try {
    await runCommand('mvn', ['-q', '-B', '-f', line.pom, 'dependency:copy-dependencies', `-DoutputDirectory=${staging}`]);
    writeFileSync(join(staging, '.installed'), pom);
    if (!(existsSync(stamp) && readFileSync(stamp, 'utf8') === pom)) {
      rmSync(libs, { recursive: true, force: true });
      renameSync(staging, libs);
    }
  } catch (err) {
    // Another process moved the same jars in first.
    if (!(existsSync(stamp) && readFileSync(stamp, 'utf8') === pom)) throw err;
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/**
 * A single-node Apache Kafka in KRaft mode (broker and controller in one JVM), run from its
 * Maven Central jars. Replication settings are those a single node allows; topics the loader
 * creates get min.insync.replicas 1 here, so acks=all means "on this broker's log".
 */
export function kafkaService(stackDir: string, port: number, controllerPort: number, options: KafkaServiceOptions = {}): StackService {
  const line = options.line ?? DEFAULT_KAFKA_LINE;
  const dir = join(stackDir, 'kafka');
  const libs = kafkaLibsDir(stackDir, line);
  // Per line: a KRaft log formatted by a newer line is not readable by an older one.
  const data = join(dir, line.name, 'data');
  const tlsDir = join(dir, 'tls');
  const pidFile = join(dir, 'kafka.pid');
  const logFile = join(dir, 'kafka.log');
  const properties = join(dir, 'server.properties');
  const logConfig = join(dir, line.logging === 'log4j2' ? 'log4j2.properties' : 'log4j.properties');
  const logFlag = line.logging === 'log4j2' ? `-Dlog4j2.configurationFile=${logConfig}` : `-Dlog4j.configuration=file:${logConfig}`;
  const brokers = [`127.0.0.1:${port}`];

  function listenerConfig(access: SecureKafkaAccess | undefined): string[] {
    if (!access) {
      return [
        `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
        `advertised.listeners=PLAINTEXT://127.0.0.1:${port}`,
        'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
        'inter.broker.listener.name=PLAINTEXT',
      ];
    }
    return [
      `listeners=SASL_SSL://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
      `advertised.listeners=SASL_SSL://127.0.0.1:${port}`,
      'listener.security.protocol.map=SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT',
      'inter.broker.listener.name=SASL_SSL',
      'sasl.enabled.mechanisms=SCRAM-SHA-512',
      'sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512',
      `listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="${access.admin.username}" password="${access.admin.password}";`,
      'ssl.keystore.type=PKCS12',
      `ssl.keystore.location=${join(tlsDir, 'broker.p12')}`,
      `ssl.keystore.password=${keystorePassword(access)}`,
      `ssl.key.password=${keystorePassword(access)}`,
      'ssl.truststore.type=PEM',
      `ssl.truststore.location=${access.caFile}`,
      ...(options.acls
        ? [
            'authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer',
            // The controller listener is PLAINTEXT on loopback: the broker reaches its own
            // controller as ANONYMOUS, which needs ClusterAction.
            `super.users=User:${access.admin.username};User:ANONYMOUS`,
            'allow.everyone.if.no.acl.found=false',
          ]
        : []),
    ];
  }

  function writeConfig(access: SecureKafkaAccess | undefined): void {
    writeFileSync(
      properties,
      [
        'process.roles=broker,controller',
        'node.id=1',
        `controller.quorum.voters=1@127.0.0.1:${controllerPort}`,
        ...listenerConfig(access),
        'controller.listener.names=CONTROLLER',
        `log.dirs=${data}`,
        'num.partitions=3',
        'offsets.topic.replication.factor=1',
        'offsets.topic.num.partitions=10',
        'transaction.state.log.replication.factor=1',
        'transaction.state.log.min.isr=1',
        'transaction.state.log.num.partitions=10',
        'group.initial.rebalance.delay.ms=0',
        'auto.create.topics.enable=false',
        'log.retention.hours=-1',
        ...(options.brokerSettings ?? []),
        '',
      ].join('\n'),
    );
    writeFileSync(logConfig, line.logging === 'log4j2' ? log4j2Config(join(dir, 'server.log')) : log4jConfig(join(dir, 'server.log')));
  }

  const classpath = `${libs}/*`;

  function runningPid(): number | undefined {
    const pid = readPid(pidFile);
    return isOurs(pid, dir) ? pid : undefined;
  }

  /** The end of the broker's own log (where a failed start says why), as a suffix for an error. */
  function logTail(): string {
    const tail = tailOf(join(dir, 'server.log'), 15) || tailOf(logFile, 15);
    return tail ? `; its log ends:\n${tail}` : '';
  }

  function clientAccess(): Pick<KafkaOptions, 'ssl' | 'sasl'> {
    const access = options.secure ? secureKafkaAccess(stackDir) : undefined;
    if (!access) return {};
    return { ssl: { ca: readFileSync(access.caFile) }, sasl: { mechanism: 'scram-sha-512', ...access.admin } };
  }

  return {
    name: 'kafka',
    port,
    logFile,
    install: (progress) => installKafkaLine(stackDir, line, progress),
    runningPid,
    async start() {
      mkdirSync(data, { recursive: true });
      const access = options.secure ? await ensureTls(tlsDir) : undefined;
      writeConfig(access);
      if (!existsSync(join(data, 'meta.properties'))) {
        const clusterId = (await runCommand('java', ['-cp', classpath, 'kafka.tools.StorageTool', 'random-uuid'])).trim().split('\n').pop() as string;
        // SCRAM users of a KRaft cluster live in its metadata log: they are written at format time.
        const scram = access ? [access.admin, access.loader].flatMap((u) => ['--add-scram', `SCRAM-SHA-512=[name=${u.username},password=${u.password}]`]) : [];
        await runCommand('java', [logFlag, '-cp', classpath, 'kafka.tools.StorageTool', 'format', '-t', clusterId, '-c', properties, ...scram]);
      }
      await spawnDetached('java', ['-Xms256m', '-Xmx1g', '-XX:+UseG1GC', logFlag, '-cp', classpath, 'kafka.Kafka', properties], {
        cwd: dir,
        logFile,
        pidFile,
      });
    },
    async waitReady(timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      await waitUntil(async () => {
        if (await portInUse(port)) return;
        // A broker that exited (a port taken, a bad setting) never will listen: say so now, with its reason.
        if (runningPid() === undefined) throw new WaitAbandoned(`kafka exited before listening on ${port}${logTail()}`);
        throw new Error(`kafka is not listening on ${port}`);
      }, timeoutMs);
      await waitUntil(() => roundTrip({ brokers, ...clientAccess() }), Math.max(1000, deadline - Date.now()), 500);
    },
    async stop() {
      const pid = this.runningPid();
      if (pid !== undefined) await stopProcess(pid, 20_000);
      removeFile(pidFile);
    },
  };
}

function keystorePassword(access: SecureKafkaAccess): string {
  // Only guards a file in the stack folder next to the CA key; derived so that it need not be stored.
  return `ks-${access.admin.password.slice(0, 16)}`;
}

/** A CA, a broker certificate for 127.0.0.1 signed by it (PKCS12 keystore), and two SCRAM users; made once. */
async function ensureTls(tlsDir: string): Promise<SecureKafkaAccess> {
  const accessFile = join(tlsDir, 'access.json');
  if (existsSync(accessFile)) return JSON.parse(readFileSync(accessFile, 'utf8')) as SecureKafkaAccess;
  mkdirSync(tlsDir, { recursive: true, mode: 0o700 });
  const secret = () => randomBytes(18).toString('hex');
  const access: SecureKafkaAccess = {
    caFile: join(tlsDir, 'ca.pem'),
    admin: { username: 'admin', password: secret() },
    loader: { username: 'billing-loader', password: secret() },
  };
  const f = (name: string) => join(tlsDir, name);
  writeFileSync(f('broker.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  await runCommand('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.pem'), '-days', '3650', '-subj', '/CN=billing-loader stack CA']);
  await runCommand('openssl', ['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('broker.key'), '-out', f('broker.csr'), '-subj', '/CN=127.0.0.1']);
  await runCommand('openssl', ['x509', '-req', '-in', f('broker.csr'), '-CA', f('ca.pem'), '-CAkey', f('ca.key'), '-CAcreateserial', '-out', f('broker.pem'), '-days', '3650', '-extfile', f('broker.ext')]);
  await runCommand('openssl', ['pkcs12', '-export', '-in', f('broker.pem'), '-inkey', f('broker.key'), '-certfile', f('ca.pem'), '-name', 'broker', '-out', f('broker.p12'), '-passout', `pass:${keystorePassword(access)}`]);
  writeFileSync(accessFile, JSON.stringify(access, null, 2), { mode: 0o600 });
  return access;
}

function log4jConfig(file: string): string {
  return [
    'log4j.rootLogger=WARN, file',
    'log4j.logger.kafka.server.KafkaRaftServer=INFO',
    'log4j.appender.file=org.apache.log4j.RollingFileAppender',
    `log4j.appender.file.File=${file}`,
    'log4j.appender.file.MaxFileSize=10MB',
    'log4j.appender.file.MaxBackupIndex=2',
    'log4j.appender.file.layout=org.apache.log4j.PatternLayout',
    'log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n',
    '',
  ].join('\n');
}

function log4j2Config(file: string): string {
  return [
    'status=warn',
    'appender.file.type=RollingFile',
    'appender.file.name=file',
    `appender.file.fileName=${file}`,
    `appender.file.filePattern=${file}.%i`,
    'appender.file.layout.type=PatternLayout',
    'appender.file.layout.pattern=[%d] %p %m (%c)%n',
    'appender.file.policies.type=Policies',
    'appender.file.policies.size.type=SizeBasedTriggeringPolicy',
    'appender.file.policies.size.size=10MB',
    'appender.file.strategy.type=DefaultRolloverStrategy',
    'appender.file.strategy.max=2',
    'rootLogger.level=warn',
    'rootLogger.appenderRef.file.ref=file',
    'logger.raft.name=kafka.server.KafkaRaftServer',
    'logger.raft.level=info',
    '',
  ].join('\n');
}

/** Produces a unique record to a check topic in a transaction and consumes it back: the broker does real work. */
async function roundTrip(connection: Pick<KafkaOptions, 'brokers' | 'ssl' | 'sasl'>): Promise<void> {
  const kafka = createKafka({ ...connection, clientId: 'billing-loader-stack-check', log: silentLogger, connectionTimeoutMs: 1000, requestTimeoutMs: 5000 });
  const topic = '__billing_loader_stack_check';
  const admin = kafka.admin();
  // Transactional, as the loader's stages are: the broker creates its transaction state log on
  // the first one, which takes seconds a pipeline's first batch should not spend waiting.
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, transactionalId: `stack-check-${randomUUID()}`, createPartitioner: defaultPartitioner, retry: EOS_RETRY });
  const groupId = `stack-check-${randomUUID()}`;
  const consumer = kafka.consumer({ groupId, sessionTimeout: 6000, heartbeatInterval: 1000 });
  try {
    await admin.connect();
    if (!(await admin.listTopics()).includes(topic)) {
      await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 1, configEntries: [{ name: 'retention.ms', value: '600000' }] }], waitForLeaders: true });
    }
    const token = randomUUID();
    await producer.connect();
    const transaction = await producer.transaction();
    await transaction.send({ topic, acks: -1, messages: [{ value: token }] });
    await transaction.commit();
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('kafka round trip: record not consumed within 15 s')), 15_000);
      void consumer.run({
        eachMessage: async ({ message }) => {
          if (message.value?.toString() === token) {
            clearTimeout(timer);
            resolve();
          }
        },
      });
    });
  } finally {
    await Promise.allSettled([consumer.disconnect(), producer.disconnect()]);
    // The check group is single-use; deleting it keeps the broker's group list clean.
    await admin.deleteGroups([groupId]).catch(() => undefined);
    await admin.disconnect();
  }
}
