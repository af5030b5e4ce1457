/**
 * What a server full of queues costs its readers (issue 29, item 3): starts
 * `sepp serve` with `limits.max_queues = --queues`, fills it to the limit (one
 * job per queue, in batches), checks that one queue more is refused, and
 * prints, for each reader, the median wall time of --runs reads and the size
 * of its answer: ListQueues followed page by page (the SDK's
 * `queues.list()`), one ListQueues page, the admin overview (the dashboard's
 * poll) and a `/metrics` scrape; then the server's resident memory. A table,
 * not an assertion: tests/rpc/answer-bounds.test.ts checks the behaviour.
 *
 *   npx tsx bench/queue-explosion.ts [--queues 1000] [--runs 5]
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SeppClient } from '../clients/typescript/src/index.ts';
import { markdownTable, median, parseArgs } from './engine-lib.ts';
import { installCleanupHandlers } from './lib/processes.ts';
import { rssMib, startSeppServe } from './lib/sepp-serve.ts';

const args = parseArgs(process.argv.slice(2));
const queues = Number(args.get('queues') ?? 1000);
const runs = Number(args.get('runs') ?? 5);
const root = new URL('..', import.meta.url).pathname;

/** Times `read` `runs` times; the median wall time in ms and the last answer's size in bytes. */
async function timed(read: () => Promise<number>): Promise<{ ms: number; bytes: number }> {
  const times: number[] = [];
  let bytes = 0;
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    bytes = await read();
    times.push(performance.now() - started);
  }
  return { ms: median(times), bytes };
}

async function httpBytes(url: string): Promise<number> {
  const answer = await fetch(url);
  const body = await answer.arrayBuffer();
  if (!answer.ok) throw new Error(`${url}: HTTP ${answer.status}`);
  return body.byteLength;
}

installCleanupHandlers(async () => {});
const dir = mkdtempSync(join(tmpdir(), 'sepp-queue-explosion-'));
const config = join(dir, 'sepp.toml');
writeFileSync(config, `[server]\ndurability = "relaxed"\n[limits]\nmax_queues = ${queues}\n`, {
  mode: 0o600,
});
const server = await startSeppServe({ srcDir: root, config, dir, env: { SEPP_DISK_RESERVE_BYTES: '0' } });
const client = SeppClient.connect(`127.0.0.1:${server.grpcPort}`);
try {
  const names = Array.from({ length: queues }, (_, i) => `tenant-${String(i).padStart(6, '0')}`);
  const fillStarted = performance.now();
  for (let i = 0; i < names.length; i += 1000) {
    await client.enqueueBatch(names.slice(i, i + 1000).map((queue) => ({ queue, type: 't' })));
  }
  const fillMs = performance.now() - fillStarted;
  const [beyond] = await client.enqueueBatch([{ queue: 'one-too-many', type: 't' }]);
  const refused = beyond !== undefined && !beyond.ok ? beyond.reason : 'accepted (limit not enforced)';
  const admin = `http://127.0.0.1:${server.adminPort}`;
  const rows: string[][] = [];
  const add = (what: string, figures: { ms: number; bytes: number }) =>
    rows.push([what, figures.ms.toFixed(1), (figures.bytes / 1024).toFixed(0)]);
  add(
    'ListQueues, every page (SDK queues.list())',
    await timed(async () => JSON.stringify(await client.queues.list()).length),
  );
  add(
    'ListQueues, one page of 100',
    await timed(async () => JSON.stringify(await client.queues.listPage({ pageSize: 100 })).length),
  );
  add('admin overview (GET /api/v1/overview)', await timed(() => httpBytes(`${admin}/api/v1/overview`)));
  add('/metrics scrape', await timed(() => httpBytes(`${admin}/metrics`)));
  console.log(
    `${queues} queues (limits.max_queues = ${queues}), filled in ${(fillMs / 1000).toFixed(1)} s; ` +
      `one more: ${refused}; server RSS ${rssMib(server.pid).toFixed(0)} MiB; medians of ${runs} reads\n`,
  );
  console.log(markdownTable(['read', 'median ms', 'answer KiB (SDK: JSON of the result)'], rows));
} finally {
  client.close();
  await server.stop(10_000);
  rmSync(dir, { recursive: true, force: true });
}
