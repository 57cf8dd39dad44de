import { GenericContainer, Network, Wait, getContainerRuntimeClient } from 'testcontainers';
import { KafkaContainer } from '@testcontainers/kafka';
import { PostgreSqlContainer } from '@testcontainers/postgresql';

/**
 * The container path of the test setup, for machines with a Docker engine. It is NOT exercised
 * on the machines this project is developed and tested on (they have no Docker engine); the
 * native stack is. Kept small so there is little to go wrong.
 */
export async function dockerAvailable(): Promise<boolean> {
  try {
    await getContainerRuntimeClient();
    return true;
  } catch {
    return false;
  }
}

export async function startContainers(): Promise<{ settings: { KAFKA_BROKERS: string; SCHEMA_REGISTRY_URL: string; DATABASE_URL: string }; stop: () => Promise<void> }> {
  const network = await new Network().start();
  const [kafka, registry, postgres] = await Promise.all([
    new KafkaContainer('confluentinc/cp-kafka:7.7.1').withKraft().withNetwork(network).start(),
    new GenericContainer('apicurio/apicurio-registry:3.0.9')
      .withEnvironment({ APICURIO_RULES_GLOBAL_COMPATIBILITY: 'BACKWARD' })
      .withExposedPorts(8080)
      .withWaitStrategy(Wait.forHttp('/apis/ccompat/v7/subjects', 8080))
      .start(),
    new PostgreSqlContainer('postgres:17').withUsername('postgres').withPassword('postgres').start(),
  ]);
  return {
    settings: {
      KAFKA_BROKERS: `${kafka.getHost()}:${kafka.getMappedPort(9093)}`,
      SCHEMA_REGISTRY_URL: `http://${registry.getHost()}:${registry.getMappedPort(8080)}/apis/ccompat/v7`,
      DATABASE_URL: postgres.getConnectionUri(),
    },
    stop: async () => {
      await Promise.all([kafka.stop(), registry.stop(), postgres.stop()]);
      await network.stop();
    },
  };
}
