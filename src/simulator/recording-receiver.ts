import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  method: string;
  path: string;
  contentType: string | undefined;
  body: string;
  /** The parsed JSON body, or undefined when it was not JSON. */
  json: unknown;
  /** The X-Retry-Count header, when sent (a repeat of a failed delivery). */
  retryCount?: string;
}

/**
 * Decides the answer to one request; return the status (and headers). May be async, e.g. to
 * fetch the referenced resources before answering, as the loader does.
 */
export type ReceiverAnswer = (req: ReceivedRequest, index: number) => { status: number; headers?: Record<string, string> } | Promise<{ status: number; headers?: Record<string, string> }>;

export interface RecordingReceiver {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** Every request received, in arrival order. */
  received: ReceivedRequest[];
  setAnswer(answer: ReceiverAnswer): void;
  stop(): Promise<void>;
}

/**
 * A webhook receiver that records what arrives and answers as told (default 200). For tests and
 * demos of the simulator's dispatcher; not part of the loader.
 */
export async function startRecordingReceiver(answer: ReceiverAnswer = () => ({ status: 200 })): Promise<RecordingReceiver> {
  const received: ReceivedRequest[] = [];
  let current = answer;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      const retryCount = req.headers['x-retry-count'];
      const entry: ReceivedRequest = { method: req.method ?? '', path: req.url ?? '', contentType: req.headers['content-type'], body, json, ...(typeof retryCount === 'string' ? { retryCount } : {}) };
      received.push(entry);
      Promise.resolve(current(entry, received.length - 1)).then(
        (a) => res.writeHead(a.status, a.headers).end(),
        () => res.writeHead(500).end(),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    setAnswer: (a) => void (current = a),
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
