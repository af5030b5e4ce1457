/**
 * What one caller's unread HTTP answers make the server hold (attack6): --connections
 * connections of one caller (a server without keys: every caller is the same one) each GET a
 * job with a --payload-mib MiB JSON payload, read the first bytes of the answer (its status
 * line) and then nothing, as a client reading too slowly to matter but fast enough for the write
 * deadline (30 s) would. Printed, for this tree's bundle and a baseline's (--against DIR, its
 * dist/sepp.cjs), interleaved, medians of --runs (3): the server's RSS before and once every
 * connection had its status line, the growth, and how many answers were 200 and 429.
 *
 *   npm run build && npx tsx bench/http-unread-answers.ts --against /work/wt/base9 [--runs 3]
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { markdownTable, median } from './engine-lib.ts';
import { interleaved } from './lib/interleaved.ts';

const { values: args } = parseArgs({
  options: {
    against: { type: 'string' },
    connections: { type: 'string', default: '100' },
    'payload-mib': { type: 'string', default: '5' },
    runs: { type: 'string', default: '3' },
  },
});
const against = args.against;
if (against === undefined) throw new Error('--against DIR: a checkout with dist/sepp.cjs built');
const connections = Number(args.connections);
const payloadMib = Number(args['payload-mib']);
const runs = Number(args.runs);
const MiB = 1024 * 1024;

interface Figures {
  rssBeforeMib: number;
  rssAfterMib: number;
  ok: number;
  refused: number;
}

function rssMib(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN);
  return kib / 1024;
}

/** Starts `bundle` and resolves with its process and HTTP API's URL, from its `server.started` line. */
function startServer(bundle: string, dir: string): Promise<{ child: ChildProcess; httpUrl: string }> {
  const config = join(dir, 'sepp.toml');
  writeFileSync(config, `[queue_defaults]\nmax_payload_bytes = "${payloadMib + 1}MiB"\n`);
  const child = spawn(
    process.execPath,
    [
      bundle,
      'serve',
      '--config',
      config,
      '--data-dir',
      join(dir, 'data'),
      '--grpc-listen',
      '127.0.0.1:0',
      '--admin-listen',
      '127.0.0.1:0',
      '--http-listen',
      '127.0.0.1:0',
      '--durability',
      'relaxed',
      '--log-format',
      'json',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  return new Promise((resolve, reject) => {
    let text = '';
    // The server logs to stderr.
    child.stderr?.on('data', (chunk: Buffer) => {
      text += String(chunk);
      const started = /"event":"server\.started".*?"http":"([^"]+)"/.exec(text);
      if (started?.[1] !== undefined) resolve({ child, httpUrl: started[1] });
    });
    child.once('exit', (code) => reject(new Error(`the server exited (${code}) before it started`)));
  });
}

function post(url: string, path: string, body: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}${path}`,
      { method: 'POST', headers: { 'Content-Type': 'application/json' } },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => {
          text += String(chunk);
        });
        res.on('end', () => (res.statusCode === 200 ? resolve(text) : reject(new Error(text))));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** GETs `path` on a new connection, reads the status line, then nothing more: resolves with the status. */
function getUnread(port: number, path: string, sockets: Socket[]): Promise<number> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    sockets.push(socket);
    socket.on('error', () => resolve(0));
    socket.once('data', (chunk: Buffer) => {
      socket.pause();
      resolve(Number(/^HTTP\/1\.1 (\d+)/.exec(chunk.subarray(0, 20).toString())?.[1] ?? 0));
    });
    socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\n\r\n`);
  });
}

async function run(bundle: string): Promise<Figures> {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-bench-unread-'));
  const { child, httpUrl } = await startServer(bundle, dir);
  const sockets: Socket[] = [];
  try {
    const payload = 'x'.repeat(payloadMib * MiB);
    const { jobId } = JSON.parse(
      await post(httpUrl, '/v1/jobs', JSON.stringify({ queue: 'big', type: 't', payload })),
    ) as { jobId: string };
    await new Promise((resolve) => setTimeout(resolve, 500));
    const pid = child.pid ?? 0;
    const rssBeforeMib = rssMib(pid);
    const port = Number(new URL(httpUrl).port);
    const statuses: number[] = [];
    // Ten at a time, as attack6's client opened them.
    for (let at = 0; at < connections; at += 10) {
      const batch = Array.from({ length: Math.min(10, connections - at) }, () =>
        getUnread(port, `/v1/jobs/${jobId}`, sockets),
      );
      statuses.push(...(await Promise.all(batch)));
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
    return {
      rssBeforeMib,
      rssAfterMib: rssMib(pid),
      ok: statuses.filter((s) => s === 200).length,
      refused: statuses.filter((s) => s === 429).length,
    };
  } finally {
    for (const socket of sockets) socket.destroy();
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  }
}

const bundles = {
  base: join(against, 'dist', 'sepp.cjs'),
  this: new URL('../dist/sepp.cjs', import.meta.url).pathname,
} as const;
const figures = await interleaved(runs, (side) => run(bundles[side]));
const row = (side: 'base' | 'this') => {
  const f = figures[side];
  return [
    side === 'base' ? `base (${against})` : 'this tree',
    median(f.map((x) => x.rssBeforeMib)).toFixed(0),
    median(f.map((x) => x.rssAfterMib)).toFixed(0),
    median(f.map((x) => x.rssAfterMib - x.rssBeforeMib)).toFixed(0),
    median(f.map((x) => x.ok)).toFixed(0),
    median(f.map((x) => x.refused)).toFixed(0),
  ];
};
console.log(
  `${connections} connections of one caller, each a GET of a job with a ${payloadMib} MiB JSON payload, ` +
    `reading only the status line; medians of ${runs} interleaved runs; ${cpus().length} cores, ` +
    `load ${figures.loads.map((l) => l.toFixed(1)).join(' ')}\n`,
);
console.log(
  markdownTable(
    ['server', 'RSS before MiB', 'RSS after MiB', 'growth MiB', '200', '429'],
    [row('base'), row('this')],
  ),
);
