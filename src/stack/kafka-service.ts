import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EOS_RETRY, createKafka, defaultPartitioner } from '../kafka/client.js';
import { silentLogger } from '../log.js';
import { isOurs, portInUse, readPid, removeFile, runCommand, spawnDetached, stopProcess, waitUntil } from './processes.js';
import type { StackService } from './service.js';
import { packageRoot } from './settings.js';

const pomFile = join(packageRoot, 'src', 'stack', 'kafka', 'pom.xml');

/**
 * A single-node Apache Kafka 3.9 in KRaft mode (broker and controller in one JVM), run from its
 * Maven Central jars. Replication settings are those a single node allows; topics the loader
 * creates get min.insync.replicas 1 here, so acks=all means "on this broker's log".
 */
export function kafkaService(stackDir: string, port: number, controllerPort: number): StackService {
  const dir = join(stackDir, 'kafka');
  const libs = join(dir, 'libs');
  const data = join(dir, 'data');
  const pidFile = join(dir, 'kafka.pid');
  const logFile = join(dir, 'kafka.log');
  const properties = join(dir, 'server.properties');
  const log4j = join(dir, 'log4j.properties');
  const installedStamp = join(libs, '.installed');
  const brokers = [`127.0.0.1:${port}`];

  function writeConfig(): void {
    writeFileSync(
      properties,
      [
        'process.roles=broker,controller',
        'node.id=1',
        `controller.quorum.voters=1@127.0.0.1:${controllerPort}`,
        `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
        `advertised.listeners=PLAINTEXT://127.0.0.1:${port}`,
        'controller.listener.names=CONTROLLER',
        'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
        'inter.broker.listener.name=PLAINTEXT',
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
        '',
      ].join('\n'),
    );
    writeFileSync(
      log4j,
      [
        'log4j.rootLogger=WARN, file',
        'log4j.logger.kafka.server.KafkaRaftServer=INFO',
        'log4j.appender.file=org.apache.log4j.RollingFileAppender',
        `log4j.appender.file.File=${join(dir, 'server.log')}`,
        'log4j.appender.file.MaxFileSize=10MB',
        'log4j.appender.file.MaxBackupIndex=2',
        'log4j.appender.file.layout=org.apache.log4j.PatternLayout',
        'log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n',
        '',
      ].join('\n'),
    );
  }

  const classpath = `${libs}/*`;

  return {
    name: 'kafka',
    port,
    logFile,
    async install(progress) {
      const pom = readFileSync(pomFile, 'utf8');
      if (existsSync(installedStamp) && readFileSync(installedStamp, 'utf8') === pom) return;
      progress('kafka: resolving Kafka 3.9 jars from Maven Central (first run only)');
      mkdirSync(libs, { recursive: true });
      await runCommand('mvn', ['-q', '-B', '-f', pomFile, 'dependency:copy-dependencies', `-DoutputDirectory=${libs}`]);
      writeFileSync(installedStamp, pom);
    },
    runningPid: () => {
      const pid = readPid(pidFile);
      return isOurs(pid, dir) ? pid : undefined;
    },
    async start() {
      mkdirSync(data, { recursive: true });
      writeConfig();
      if (!existsSync(join(data, 'meta.properties'))) {
        const clusterId = (await runCommand('java', ['-cp', classpath, 'kafka.tools.StorageTool', 'random-uuid'])).trim().split('\n').pop() as string;
        await runCommand('java', [`-Dlog4j.configuration=file:${log4j}`, '-cp', classpath, 'kafka.tools.StorageTool', 'format', '-t', clusterId, '-c', properties]);
      }
      await spawnDetached('java', ['-Xms256m', '-Xmx512m', '-XX:+UseG1GC', `-Dlog4j.configuration=file:${log4j}`, '-cp', classpath, 'kafka.Kafka', properties], {
        cwd: dir,
        logFile,
        pidFile,
      });
    },
    async waitReady(timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      await waitUntil(async () => {
        if (!(await portInUse(port))) throw new Error(`kafka is not listening on ${port}`);
      }, timeoutMs);
      await waitUntil(() => roundTrip(brokers), Math.max(1000, deadline - Date.now()), 500);
    },
    async stop() {
      const pid = this.runningPid();
      if (pid !== undefined) await stopProcess(pid, 20_000);
      removeFile(pidFile);
    },
  };
}

/** Produces a unique record to a check topic and consumes it back: the broker does real work. */
async function roundTrip(brokers: string[]): Promise<void> {
  const kafka = createKafka({ brokers, clientId: 'billing-loader-stack-check', log: silentLogger, connectionTimeoutMs: 1000, requestTimeoutMs: 5000 });
  const topic = '__billing_loader_stack_check';
  const admin = kafka.admin();
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: defaultPartitioner, retry: EOS_RETRY });
  const groupId = `stack-check-${randomUUID()}`;
  const consumer = kafka.consumer({ groupId, sessionTimeout: 6000, heartbeatInterval: 1000 });
  try {
    await admin.connect();
    if (!(await admin.listTopics()).includes(topic)) {
      await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 1, configEntries: [{ name: 'retention.ms', value: '600000' }] }], waitForLeaders: true });
    }
    const token = randomUUID();
    await producer.connect();
    await producer.send({ topic, acks: -1, messages: [{ value: token }] });
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
