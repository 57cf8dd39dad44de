import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request as it reached the server: `url` is the raw request target, before any decoding. */
export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export type Handler = (req: RecordedRequest, res: ServerResponse) => void | Promise<void>;

export interface RecordingServer {
  url: string;
  requests: RecordedRequest[];
  /** Most requests the server was answering at once. */
  peakInFlight(): number;
  setHandler(handler: Handler): void;
  close(): Promise<void>;
}

/**
 * A real HTTP server on 127.0.0.1 for what the simulator does not record: raw request paths,
 * token request headers and bodies, concurrency, and statuses the simulator never answers
 * (403, 400, 410, a 401 that survives renewal).
 */
export async function startRecordingServer(handler: Handler): Promise<RecordingServer> {
  let current = handler;
  const requests: RecordedRequest[] = [];
  let inFlight = 0;
  let peak = 0;
  const server: Server = createServer((req, res) => {
    inFlight++;
    peak = Math.max(peak, inFlight);
    res.once('close', () => inFlight--);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const recorded = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      requests.push(recorded);
      Promise.resolve(current(recorded, res)).catch((err: unknown) => res.destroy(err as Error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    peakInFlight: () => peak,
    setHandler: (h) => void (current = h),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

export function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(typeof body === 'string' ? body : JSON.stringify(body));
}

/** A handler that issues `token` at the token endpoint and answers resources with `resource`. */
export function tokenThen(token: string, resource: Handler): Handler {
  return (req, res) => {
    if (req.url.startsWith('/oauth/token')) return json(res, 200, { access_token: token, token_type: 'bearer' });
    return resource(req, res);
  };
}
