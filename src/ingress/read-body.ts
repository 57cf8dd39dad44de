import type { IncomingMessage } from 'node:http';
import { LoaderError } from '../errors.js';

export type BodyResult = { ok: true; body: Buffer } | { ok: false; reason: 'too-large' };

/**
 * Reads a request body up to `limit` bytes. A body announced or found to be larger is not read
 * further (the rest is discarded as it arrives, and the caller closes the connection), so an
 * oversized upload costs at most `limit` bytes of memory. Rejects when the client goes away.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<BodyResult> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    return Promise.resolve({ ok: false, reason: 'too-large' });
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) {
        chunks.push(chunk);
        return;
      }
      cleanup();
      req.resume();
      resolve({ ok: false, reason: 'too-large' });
    };
    const onEnd = () => {
      cleanup();
      resolve({ ok: true, body: Buffer.concat(chunks, size) });
    };
    const onError = (err: Error) => {
      cleanup();
      reject(new LoaderError('reading the request body failed', { cause: err }));
    };
    const onClose = () => {
      if (req.complete) return;
      cleanup();
      reject(new LoaderError('the client closed the connection before sending the whole body'));
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}
