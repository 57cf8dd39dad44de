#!/usr/bin/env node
// CPU per request of four do-nothing HTTP handlers (not a test): `npm run bench:handler-cost`.
// Why the ingress serves POST /webhooks with node's own handler rather than an Express route
// (docs/ARCHITECTURE.md, "The ingress's HTTP path"). Each handler reads the body and answers 200
// with a small JSON object, as the ingress does, in its own process; autocannon drives it at
// concurrency 64 over loopback, and the handler process's CPU time comes from /proc.
// Environment: BENCH_SECONDS (default 10) per handler, BENCH_ROUNDS (default 2).
/* global fetch -- Node 20's built-in fetch */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRequire } from 'node:module';
import autocannon from 'autocannon';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const expressPath = createRequire(import.meta.url).resolve('express');

const answer = `'{"event_id":"0b0e3c2a-6d0e-4a7e-9a57-0b6f1e4f8a11"}'`;
const nodeAnswer = `(s) => { s.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }); s.end(${answer}); }`;
const expressApp = `const e = require(${JSON.stringify(expressPath)}); const a = e(); a.disable('x-powered-by'); a.set('etag', false); a.get('/healthz', (q, s) => s.json({}));`;
const handlers = {
  'node:http': `const reply = ${nodeAnswer}; require('node:http').createServer((q, s) => { q.resume(); q.on('end', () => reply(s)); })`,
  // What Express does to every request before any route runs, and nothing else.
  'node:http + prototype swap': `const http = require('node:http'); const reply = ${nodeAnswer}; const Q = Object.create(http.IncomingMessage.prototype); const S = Object.create(http.ServerResponse.prototype); Q.extra = function () {}; S.extra = function () {}; http.createServer((q, s) => { Object.setPrototypeOf(q, Q); Object.setPrototypeOf(s, S); q.resume(); q.on('end', () => reply(s)); })`,
  'Express 5 route, writeHead/end': `const reply = ${nodeAnswer}; ${expressApp} a.post('/webhooks', (q, s) => { q.resume(); q.on('end', () => reply(s)); }); require('node:http').createServer(a)`,
  'Express 5 route, res.status().json()': `${expressApp} a.post('/webhooks', (q, s) => { q.resume(); q.on('end', () => s.status(200).json({ event_id: '0b0e3c2a-6d0e-4a7e-9a57-0b6f1e4f8a11' })); }); require('node:http').createServer(a)`,
};

function freePort() {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** User + system CPU seconds of a process so far. */
function cpuSeconds(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function measure(name) {
  const port = await freePort();
  const child = spawn(process.execPath, ['-e', `${handlers[name]}.listen(${port}, '127.0.0.1')`], { stdio: 'inherit' });
  try {
    const url = `http://127.0.0.1:${port}/webhooks`;
    for (let i = 0; i < 50 && !(await fetch(url, { method: 'POST', body: '{}' }).then(() => true, () => false)); i++) await sleep(100);
    const load = (duration) =>
      autocannon({ url, method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"Event":"ContractChanged","ContractId":"5a0c9f3e8b7d6c5b4a392817"}', connections: 64, duration });
    await load(2); // warm-up: let the JIT settle
    const cpu0 = cpuSeconds(child.pid);
    const t0 = performance.now();
    const result = await load(SECONDS);
    const cores = (cpuSeconds(child.pid) - cpu0) / ((performance.now() - t0) / 1000);
    const perSecond = result.requests.total / result.duration;
    return { perSecond: Math.round(perSecond), cores: Math.round(cores * 100) / 100, cpuMicrosPerRequest: Math.round((cores / perSecond) * 1e6) };
  } finally {
    child.kill();
    await new Promise((resolve) => child.once('exit', resolve));
  }
}

console.log(`${new Date().toISOString()}, ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}), Node ${process.version}, ${SECONDS} s per handler, ${ROUNDS} rounds`);
console.log('| handler | requests/s | handler CPU, cores | CPU per request |\n|---|---|---|---|');
for (let round = 0; round < ROUNDS; round++) {
  for (const name of Object.keys(handlers)) {
    const r = await measure(name);
    console.log(`| ${name} | ${r.perSecond} | ${r.cores} | ${r.cpuMicrosPerRequest} µs |`);
  }
}
