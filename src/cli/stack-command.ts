import { Command, InvalidArgumentError } from 'commander';
import { KAFKA_LINES, kafkaLine, type KafkaLine } from '../stack/kafka-lines.js';
import { readStackKafkaVersion, readStackPorts, type StackPorts } from '../stack/settings.js';
import { stackDown, stackStatus, stackUp } from '../stack/stack.js';
import { cliConfig } from './cli-config.js';
import { environmentHelp } from './env-help.js';

function portArg(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || n > 65535) throw new InvalidArgumentError('expected a port number 1-65535');
  return n;
}

function kafkaVersionArg(value: string): KafkaLine {
  const line = kafkaLine(value);
  if (!line) throw new InvalidArgumentError(`expected one of ${KAFKA_LINES.map((l) => l.name).join(', ')}`);
  return line;
}

const progress = (line: string) => console.error(line);

export function registerStack(program: Command): void {
  const stack = program
    .command('stack')
    .description('start, stop or report the local infrastructure: Kafka (KRaft), a schema registry, PostgreSQL')
    .addHelpText('after', environmentHelp('stack'));

  stack
    .command('up')
    .description('start the local services (idempotent); prints their connection settings as KEY=value lines')
    .option('--kafka-port <port>', 'Kafka broker port', portArg)
    .option('--kafka-controller-port <port>', 'Kafka KRaft controller port', portArg)
    .option('--registry-port <port>', 'schema registry port', portArg)
    .option('--postgres-port <port>', 'PostgreSQL port', portArg)
    .option('--kafka-version <line>', `Kafka release line: ${KAFKA_LINES.map((l) => `${l.name} (${l.version})`).join(', ')}`, kafkaVersionArg)
    .addHelpText('after', `\nPorts and the Kafka line default to those of the last \`stack up\` (else 19092, 19093, 18081, 15432, Kafka ${KAFKA_LINES[KAFKA_LINES.length - 1]?.name}).\nSwitching the Kafka line needs \`stack down\` first; each line keeps its own data.\nUse in a shell: eval "$(billing-loader stack up)"`)
    .action(async (opts: { kafkaPort?: number; kafkaControllerPort?: number; registryPort?: number; postgresPort?: number; kafkaVersion?: KafkaLine }) => {
      const dir = (await cliConfig('stack')).stackDir;
      const savedPorts = readStackPorts(dir);
      const ports: StackPorts = {
        kafka: opts.kafkaPort ?? savedPorts.kafka,
        kafkaController: opts.kafkaControllerPort ?? savedPorts.kafkaController,
        registry: opts.registryPort ?? savedPorts.registry,
        postgres: opts.postgresPort ?? savedPorts.postgres,
      };
      const saved = readStackKafkaVersion(dir);
      const line = opts.kafkaVersion ?? (saved === undefined ? undefined : kafkaLine(saved));
      const settings = await stackUp({ dir, ports, progress, ...(line ? { kafkaLine: line } : {}) });
      for (const [key, value] of Object.entries(settings)) console.log(`${key}=${value}`);
    });

  stack
    .command('down')
    .description('stop the local services this stack started (data is kept)')
    .action(async () => {
      const dir = (await cliConfig('stack')).stackDir;
      await stackDown({ dir, ports: readStackPorts(dir), progress });
      progress('stack: stopped');
    });

  stack
    .command('status')
    .description('report each local service: running (with pid and port) or stopped; exit 0 when all run, 3 otherwise')
    .action(async () => {
      const dir = (await cliConfig('stack')).stackDir;
      const rows = stackStatus({ dir, ports: readStackPorts(dir) });
      for (const r of rows) console.log(`${r.name.padEnd(16)} ${r.state.padEnd(8)} port ${r.port}${r.pid === undefined ? '' : `  pid ${r.pid}`}${r.version ? `  ${r.version}` : ''}`);
      if (rows.some((r) => r.state !== 'running')) process.exitCode = 3;
    });
}
