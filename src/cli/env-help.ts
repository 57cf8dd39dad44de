import { describeOptions } from '../config.js';

/** How to reach Kafka and the registry goes with every command that names them. */
const ACCESS: Record<string, string[]> = {
  KAFKA_BROKERS: ['KAFKA_SSL', 'KAFKA_SSL_CA_FILE', 'KAFKA_SSL_CERT_FILE', 'KAFKA_SSL_KEY_FILE', 'KAFKA_SASL_MECHANISM', 'KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD'],
  SCHEMA_REGISTRY_URL: ['SCHEMA_REGISTRY_USERNAME', 'SCHEMA_REGISTRY_PASSWORD', 'SCHEMA_REGISTRY_CA_FILE'],
};

/** The configuration table for `--help` of commands that read the environment. */
export function environmentHelp(variables: string[]): string {
  const wanted = new Set(variables.flatMap((v) => [v, ...(ACCESS[v] ?? [])]));
  const rows = describeOptions().filter((o) => wanted.has(o.env));
  const width = Math.max(...rows.map((r) => r.env.length));
  return ['', 'Environment (a .env file in the working folder may supply these):', ...rows.map((r) => `  ${r.env.padEnd(width)}  ${r.description} (default: ${r.default})`)].join('\n');
}
