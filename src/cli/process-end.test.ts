import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const moduleUrl = new URL('./process-end.ts', import.meta.url).href;

/** Runs `body` in a fresh node process (ES module, this module imported as `end`; node strips its types); its exit code or signal and stderr. SIGKILLed after `killAfterMs`. */
async function run(body: string, killAfterMs = 30_000): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', `const end = await import(${JSON.stringify(moduleUrl)});\n${body}`], {
    cwd: fileURLToPath(new URL('.', import.meta.url)),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
  const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  clearTimeout(timer);
  return { code, signal, stderr };
}

describe('endAfterReturn', () => {
  it('ends a process that a returned command left a timer and sockets in, with its exit code, naming what was open and the peers', async () => {
    const r = await run(`
      const net = await import('node:net');
      const server = net.createServer().listen(0, '127.0.0.1');
      await new Promise((resolve) => server.once('listening', resolve));
      const port = server.address().port;
      await new Promise((resolve) => net.connect(port, '127.0.0.1', resolve));
      process.stderr.write(port + '\\n');
      setInterval(() => {}, 1000);
      end.endAfterReturn(0, 200);`);
    expect(r.signal).toBeNull();
    expect(r.code).toBe(0);
    const [port, json] = r.stderr.trim().split('\n');
    const line = JSON.parse(json ?? '') as { level: string; exitCode: number; open: string[]; peers: string[]; msg: string };
    expect(line).toMatchObject({ level: 'warn', exitCode: 0, msg: 'the command returned with resources still open; exiting' });
    expect(line.open).toEqual(expect.arrayContaining(['TCPServerWrap', 'TCPSocketWrap', 'Timeout']));
    // The client's socket, connected to the server's port.
    expect(line.peers).toContain(`127.0.0.1:${port}`);
  });

  it("keeps a failed command's code", async () => {
    const r = await run(`setInterval(() => {}, 1000); end.endAfterReturn(3, 200);`);
    expect(r.code).toBe(3);
  });

  it('lets a process with nothing left open exit at once, silently', async () => {
    // A grace period longer than the test lets it run: it exits by itself or is killed.
    const r = await run(`end.endAfterReturn(0, 120_000);`, 30_000);
    expect(r.signal).toBeNull();
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
  });
});
