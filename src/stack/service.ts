/** One service of the local stack (Kafka, schema registry, PostgreSQL), with an explicit life cycle. */
export interface StackService {
  readonly name: string;
  readonly port: number;
  /** Downloads or prepares what the service needs; a no-op when already done. */
  install(progress: (line: string) => void): Promise<void>;
  /** The pid of our running instance, if any. */
  runningPid(): number | undefined;
  start(): Promise<void>;
  /** Resolves once the service does real work (a round trip, a query), or rejects after `timeoutMs`. */
  waitReady(timeoutMs: number): Promise<void>;
  stop(): Promise<void>;
  /** Where its log goes, for error messages. */
  readonly logFile: string;
}
