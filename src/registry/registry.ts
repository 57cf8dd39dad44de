import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { Agent as HttpsAgent } from 'node:https';
import { join } from 'node:path';
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import avro from 'avsc';
import { Agent as UndiciAgent, buildConnector, fetch as undiciFetch, type RequestInit } from 'undici';
import type { Config } from '../config.js';
import { LoaderError } from '../errors.js';
import { packageRoot } from '../package-root.js';

/** Where the `.avsc` files of the public topics live. */
export const schemasDir = join(packageRoot, 'schemas');

/**
 * The loader's view of a Confluent-compatible schema registry: register an Avro schema under a
 * subject, encode in the Confluent wire format (magic byte 0, 4-byte schema id, Avro body),
 * decode any id the registry knows. Schema lookups are cached by the underlying client.
 */
export interface Registry {
  /** Registers (or finds) `schema` under `subject`; the registry's compatibility rule applies. */
  register(subject: string, schema: string): Promise<number>;
  /** Reads `schemas/<file>` and registers it under `subject`. */
  registerFile(subject: string, file: string): Promise<number>;
  encode(schemaId: number, value: unknown): Promise<Buffer>;
  decode(buffer: Buffer): Promise<unknown>;
  /** Sets the compatibility level of one subject (BACKWARD, FULL, NONE, ...). */
  setCompatibility(subject: string, level: string): Promise<void>;
  /** Resolves when the registry answers; for readiness checks. */
  ping(): Promise<void>;
}

/** A keep-alive https agent that reads its CA file for each new connection, not once. */
class CaFileHttpsAgent extends HttpsAgent {
  constructor(private readonly caFile: string) {
    super({ keepAlive: true });
  }

  override createConnection(options: Parameters<HttpsAgent['createConnection']>[0], callback?: Parameters<HttpsAgent['createConnection']>[1]): ReturnType<HttpsAgent['createConnection']> {
    return super.createConnection({ ...options, ca: readFileSync(this.caFile) }, callback);
  }
}

export type RegistrySettings = Pick<Config, 'schemaRegistryUrl' | 'schemaRegistryUsername' | 'schemaRegistryPassword' | 'schemaRegistryCaFile'>;

/** `target`: the registry's base URL, or the configuration (URL, basic auth, CA of an https URL). */
export function createRegistry(target: string | RegistrySettings): Registry {
  const settings: RegistrySettings = typeof target === 'string' ? { schemaRegistryUrl: target, schemaRegistryUsername: undefined, schemaRegistryPassword: undefined, schemaRegistryCaFile: undefined } : target;
  const baseUrl = settings.schemaRegistryUrl;
  const caFile = settings.schemaRegistryCaFile;
  const auth = settings.schemaRegistryUsername && settings.schemaRegistryPassword ? { username: settings.schemaRegistryUsername, password: settings.schemaRegistryPassword } : undefined;
  const client = new SchemaRegistry({ host: baseUrl, ...(auth ? { auth } : {}), ...(caFile ? { agent: new CaFileHttpsAgent(caFile) } : {}) });
  // The CA file is read for each new connection (a CA renewed on disk is used from the next one).
  const dispatcher = caFile ? new UndiciAgent({ connect: (options, callback) => buildConnector({ ca: readFileSync(caFile) })(options, callback) }) : undefined;
  const authorization = auth ? { Authorization: `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}` } : {};
  const api = (path: string, init?: RequestInit) =>
    undiciFetch(`${baseUrl}${path}`, { ...init, ...(dispatcher ? { dispatcher } : {}), headers: { 'Content-Type': 'application/vnd.schemaregistry.v1+json', ...authorization, ...(init?.headers as Record<string, string> | undefined) } });

  // One POST, as Confluent's own clients do: it returns the id of the schema, registered now or
  // before, and writes nothing else. The schema client's `register` first reads the subject's
  // compatibility and, on a subject's first schema, writes it: several instances starting at once
  // then race on that write (Apicurio answers the losers 409), and a subject an operator had set
  // to anything but BACKWARD would be refused. The registry's own rule (global or the subject's)
  // applies either way.
  const register = async (subject: string, schema: string): Promise<number> => {
    const failed = (message: string, extra: { cause?: unknown; status?: number }) =>
      new LoaderError(`schema registration under '${subject}' failed: ${message}`, {
        ...(extra.cause === undefined ? {} : { cause: extra.cause }),
        retriable: extra.status === undefined || extra.status >= 500,
        ...(extra.status === undefined ? {} : { context: { status: extra.status } }),
      });
    let res;
    try {
      res = await api(`/subjects/${encodeURIComponent(subject)}/versions`, { method: 'POST', body: JSON.stringify({ schema }) });
    } catch (err) {
      throw failed((err as Error).message, { cause: err });
    }
    const text = await res.text();
    if (!res.ok) throw failed(`HTTP ${res.status} ${text}`, { status: res.status });
    const id = (JSON.parse(text) as { id?: unknown }).id;
    if (typeof id !== 'number') throw failed(`the registry answered without an id: ${text}`, { status: res.status });
    // As the client's own register does: the schema just registered encodes without a lookup.
    client.cache.setSchema(id, SchemaType.AVRO, avro.Type.forSchema(JSON.parse(schema) as avro.Schema));
    return id;
  };

  return {
    register,
    registerFile: async (subject, file) => register(subject, await readFile(join(schemasDir, file), 'utf8')),
    encode: (schemaId, value) => client.encode(schemaId, value),
    decode: (buffer) => client.decode(buffer),
    async setCompatibility(subject, level) {
      const res = await api(`/config/${encodeURIComponent(subject)}`, { method: 'PUT', body: JSON.stringify({ compatibility: level }) });
      if (!res.ok) throw new LoaderError(`setting compatibility of '${subject}' failed: HTTP ${res.status} ${await res.text()}`, { context: { status: res.status } });
    },
    async ping() {
      const res = await api('/subjects', { signal: AbortSignal.timeout(3000) });
      if (!res.ok) throw new LoaderError(`schema registry answered HTTP ${res.status}`, { retriable: true, context: { status: res.status } });
    },
  };
}
