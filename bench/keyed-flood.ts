/**
 * How much memory large calls with a valid API key cost the server (issue 29,
 * item 5): starts `sepp serve` with a producer key, sends many calls at once
 * with it, each one large message, and prints the server's resident memory
 * before, at its peak (50 ms samples) and after the calls ended (2 s and 10 s
 * after). The calls are Enqueue with a job of `--payload-mib` (stored), or
 * `--kind junk`: GetServerInfo with a message of unknown fields, which the
 * server reads, decodes and answers at once.
 *
 *   npx tsx bench/keyed-flood.ts [--calls 200] [--connections 10] [--payload-mib 3.9]
 *       [--kind enqueue|junk] [--runs 1] [--server-env NAME=VALUE,...] [--toml 'TOML']
 *       [--against DIR]
 *
 * `--against DIR` runs each measurement a second time with the server from
 * another checkout (say /work/main), interleaved, to compare.
 *
 * `--server-env` sets variables of the server process (say MALLOC_ARENA_MAX=2)
 * to see where memory that stays comes from. Not part of `npm test`
 * (tests/rpc/bytes-in-flight.test.ts checks the bound's accounting).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { EnqueueRequest } from '../clients/typescript/src/gen/sepp/v1/produce.js';
import { testJob } from '../tests/helpers/server.ts';
import { parseArgs } from './engine-lib.ts';
import { flood } from './lib/flood.ts';
import { installCleanupHandlers } from './lib/processes.ts';
import { rssMib, startSeppServe } from './lib/sepp-serve.ts';

const args = parseArgs(process.argv.slice(2));
const calls = Number(args.get('calls') ?? 200);
const connections = Number(args.get('connections') ?? 10);
const payloadBytes = Math.round(Number(args.get('payload-mib') ?? 3.9) * 1024 * 1024);
const kind = String(args.get('kind') ?? 'enqueue');
const serverEnv = Object.fromEntries(
  String(args.get('server-env') ?? '')
    .split(',')
    .filter((pair) => pair.includes('='))
    .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
);
const extraToml = String(args.get('toml') ?? '').replace(/\\n/g, '\n');
const key = 'keyed-flood-bench-key-0123456789abcdef';
const root = new URL('..', import.meta.url).pathname;
const roots: { label: string; dir: string }[] = [
  { label: 'this checkout', dir: root },
  ...(args.has('against') ? [{ label: String(args.get('against')), dir: String(args.get('against')) }] : []),
];

function request(): { path: string; message: Uint8Array } {
  if (kind === 'junk') {
    // Field 12, fixed64, over and over: unknown to GetServerInfoRequest, skipped by the decoder.
    return { path: '/sepp.v1.QueueService/GetServerInfo', message: Buffer.alloc(payloadBytes, 0x61) };
  }
  const message = EnqueueRequest.encode({
    job: testJob('flood', { payload: Buffer.alloc(payloadBytes, 0x61) }),
  }).finish();
  return { path: '/sepp.v1.QueueService/Enqueue', message };
}

async function measure(run: number, server: { label: string; dir: string }): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-keyed-flood-'));
  const config = join(dir, 'sepp.toml');
  writeFileSync(
    config,
    `[[grpc.api_keys]]\nname = "producer"\nrole = "producer"\nkey = "${key}"\n[server]\ndurability = "relaxed"\n${extraToml}`,
    { mode: 0o600 },
  );
  const process_ = await startSeppServe({
    srcDir: server.dir,
    config,
    dir,
    env: { SEPP_DISK_RESERVE_BYTES: '0', ...serverEnv },
  });
  const grpcPort = process_.grpcPort;
  const pid = process_.pid;
  try {
    await sleep(1000);
    const before = rssMib(pid);
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssMib(pid));
    }, 50);
    const started = Date.now();
    const { path, message } = request();
    const codes = await flood({
      address: `127.0.0.1:${grpcPort}`,
      path,
      calls,
      connections,
      messageBytes: message.length,
      message,
      headers: { authorization: `Bearer ${key}` },
    });
    const tookMs = Date.now() - started;
    await sleep(2000);
    const after2s = rssMib(pid);
    await sleep(8000);
    clearInterval(sampler);
    const after10s = rssMib(pid);
    const env = Object.entries(serverEnv)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ');
    console.log(
      `| ${run + 1} | ${server.label} | ${kind} | ${calls} × ${(message.length / 1024 / 1024).toFixed(1)} MiB on ${connections} connections | ${env || '—'} | ${JSON.stringify(codes)} | ${tookMs} | ${before.toFixed(0)} | ${peak.toFixed(0)} | ${after2s.toFixed(0)} | ${after10s.toFixed(0)} |`,
    );
  } finally {
    await process_.stop(10_000);
    if (args.has('keep')) console.log(readFileSync(process_.logFile, 'utf8'));
    rmSync(dir, { recursive: true, force: true });
  }
}

installCleanupHandlers(async () => {});
console.log(
  '| run | server | kind | calls | server env | grpc-status: count | took ms | RSS before MiB | peak MiB | 2 s after MiB | 10 s after MiB |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
for (let run = 0; run < Number(args.get('runs') ?? 1); run++) {
  for (const server of roots) await measure(run, server);
}
