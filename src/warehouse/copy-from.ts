import type pg from 'pg';

/**
 * `COPY ... FROM STDIN` on a node-postgres client, without a stream library: node-postgres
 * hands any object with `submit()` the connection, and calls `handleCopyInResponse` when the
 * server is ready for data. We send the whole batch (already in memory) as copyData messages.
 * Resolves with the number of rows the server reports; rejects with the server's error
 * (SQLSTATE in `code`), after which the client is ready for ROLLBACK as usual.
 */
export function copyFrom(client: pg.PoolClient | pg.Client, sql: string, data: string): Promise<number> {
  return new Promise((resolve, reject) => {
    let rows = 0;
    let failed = false;
    const submittable = {
      callback: undefined as unknown,
      submit(connection: Connection) {
        connection.query(sql);
      },
      handleCopyInResponse(connection: Connection) {
        // copyData messages of at most 1 MiB keep the socket's buffers bounded.
        const buffer = Buffer.from(data, 'utf8');
        for (let i = 0; i < buffer.length; i += CHUNK_BYTES) connection.sendCopyFromChunk(buffer.subarray(i, i + CHUNK_BYTES));
        connection.endCopyFrom();
      },
      handleCommandComplete(msg: { text?: string }) {
        const m = /^COPY (\d+)/.exec(msg.text ?? '');
        rows = m?.[1] ? Number(m[1]) : 0;
      },
      handleError(err: Error) {
        failed = true;
        reject(err);
      },
      handleReadyForQuery() {
        if (!failed) resolve(rows);
      },
      handleEmptyQuery() {},
      handleRowDescription() {},
      handleDataRow() {},
      handlePortalSuspended() {},
      handleCopyData() {},
    };
    (client as unknown as { query(s: unknown): unknown }).query(submittable);
  });
}

const CHUNK_BYTES = 1 << 20;

interface Connection {
  query(text: string): void;
  sendCopyFromChunk(chunk: Buffer): void;
  endCopyFrom(): void;
}

/**
 * One value in COPY's text format: `\N` for null; backslash, newline, carriage return and tab
 * escaped (the only characters the format gives a meaning to).
 */
export function copyText(value: string | number | boolean | null | undefined): string {
  if (value === null || value === undefined) return '\\N';
  const s = String(value);
  return /[\\\n\r\t]/.test(s) ? s.replace(/[\\\n\r\t]/g, escapeChar) : s;
}

function escapeChar(c: string): string {
  return c === '\\' ? '\\\\' : c === '\n' ? '\\n' : c === '\r' ? '\\r' : '\\t';
}

/** A PostgreSQL array literal of text elements (every element quoted), before COPY escaping. */
export function arrayLiteral(values: readonly string[]): string {
  if (values.length === 0) return '{}';
  return `{${values.map((v) => `"${v.replace(/[\\"]/g, (c) => `\\${c}`)}"`).join(',')}}`;
}
