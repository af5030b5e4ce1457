/**
 * How much memory calls without an API key cost the server (issue 14, item 7):
 * starts `sepp serve` with an API key, sends many calls at once without one,
 * each with a large message, and reports the server's resident memory before,
 * at its peak and after. With the key checked after grpc-js had read the whole
 * message, 200 such calls of 4 MiB took a server from 90 to 891 MiB and it
 * kept it; now a QueueService call without a key is refused when its headers
 * arrive and calls that need no key (health, reflection) are capped.
 *
 *   npx tsx bench/unauthenticated-flood.ts [--calls 200] [--connections 10] [--message-mib 4] [--runs 1]
 *
 * Not part of `npm test` (tests/faults/unauthenticated-flood.test.ts checks the bound).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from './engine-lib.ts';
import { flood } from './lib/flood.ts';
import { rssMib, startSeppServe } from './lib/sepp-serve.ts';

const args = parseArgs(process.argv.slice(2));
const calls = Number(args.get('calls') ?? 200);
const connections = Number(args.get('connections') ?? 10);
const messageBytes = Number(args.get('message-mib') ?? 4) * 1024 * 1024;
const root = new URL('..', import.meta.url).pathname;

async function measure(path: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-flood-'));
  const config = join(dir, 'sepp.toml');
  writeFileSync(
    config,
    `[[grpc.api_keys]]\nname = "ops"\nrole = "admin"\nkey = "flood-bench-key-0123456789abcdef"\n`,
    {
      mode: 0o600,
    },
  );
  const server = await startSeppServe({ srcDir: root, config, dir });
  const grpcPort = server.grpcPort;
  try {
    await sleep(1000);
    const before = rssMib(server.pid);
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssMib(server.pid));
    }, 50);
    const started = Date.now();
    const codes = await flood({ address: `127.0.0.1:${grpcPort}`, path, calls, connections, messageBytes });
    const tookMs = Date.now() - started;
    await sleep(2000);
    clearInterval(sampler);
    const after = rssMib(server.pid);
    console.log(
      `| ${path} | ${calls} × ${messageBytes / 1024 / 1024} MiB on ${connections} connections | ${JSON.stringify(codes)} | ${tookMs} | ${before.toFixed(0)} | ${peak.toFixed(0)} | ${after.toFixed(0)} |`,
    );
  } finally {
    await server.stop(10_000);
    if (args.has('keep')) console.log(readFileSync(server.logFile, 'utf8'));
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log(
  '| calls to | how many | grpc-status: count | took ms | RSS before MiB | peak MiB | 2 s after MiB |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- |');
const paths = args.has('path')
  ? [String(args.get('path'))]
  : ['/sepp.v1.QueueService/Enqueue', '/grpc.health.v1.Health/Check'];
for (let run = 0; run < Number(args.get('runs') ?? 1); run++) {
  for (const path of paths) await measure(path);
}
