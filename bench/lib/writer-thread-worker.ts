/**
 * The writer thread of bench/writer-thread.ts (mode `thread`): the only connection
 * that writes. It opens the data directory with the server's own functions
 * (durability `full`: synchronous=FULL, so every COMMIT returns after its fsync),
 * and runs each batch the main thread posts through the server's group committer
 * (src/store/sqlite/group-commit.ts) — one transaction, a savepoint per operation, one
 * COMMIT — in the order the batches arrive. It answers a batch only after its
 * COMMIT returned, so the main thread acknowledges nothing that is not durable,
 * exactly as the server does today.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { runAtOnce } from '../../src/store/op.ts';
import { GroupCommitter, plainWriteHooks } from '../../src/store/sqlite/group-commit.ts';
import { openDataDir } from '../../src/store/sqlite/open.ts';
import { sqliteCapabilities } from '../../src/store/sqlite/sqlite-store.ts';
import type { StoreTx } from '../../src/store/store.ts';
import { packResults, unpackOps } from './writer-codec.ts';
import {
  createQueue,
  type FromWriter,
  type Op,
  runOp,
  type SettledResult,
  type ToWriter,
  threadCpuUs,
} from './writer-ops.ts';

if (parentPort === null) throw new Error('writer-thread-worker.ts runs as a worker thread only');
const port = parentPort;
const { dataDir } = workerData as { dataDir: string };

const db = openDataDir(dataDir, { durability: 'full' });
const caps = sqliteCapabilities(db);
let commits = 0;
let operations = 0;
let batchMs = 0;
const committer = new GroupCommitter<StoreTx>(db, caps);
committer.hooks = {
  ...plainWriteHooks,
  closed: () => new Error('the writer is closed'),
  afterCommit: (stats) => {
    commits++;
    operations += stats.operations;
    batchMs += stats.durationMs;
  },
};
runAtOnce(createQueue(caps.queues, Date.now()));

const post = (message: FromWriter) => port.postMessage(message);

async function runBatch(id: number, ops: Op[], packed: boolean): Promise<void> {
  const pending = ops.map((op) => committer.submit((tx) => runOp(tx, op)));
  // The batch is written now, synchronously: BEGIN, the operations, COMMIT (fsync).
  committer.flush();
  const settled = await Promise.allSettled(pending);
  const results: SettledResult[] = [];
  for (const outcome of settled) {
    if (outcome.status === 'fulfilled') results.push({ ok: true, value: outcome.value });
    else results.push({ ok: false, message: String(outcome.reason) });
  }
  if (packed) {
    const buffer = packResults(results);
    port.postMessage({ type: 'packed-done', id, buffer } satisfies FromWriter, [buffer]);
  } else {
    post({ type: 'done', id, results });
  }
}

function runOrFail(id: number, ops: () => Op[], packed: boolean): void {
  runBatch(id, ops(), packed).catch((error: unknown) => {
    post({ type: 'failed', id, message: String(error) });
  });
}

port.on('message', (message: ToWriter) => {
  switch (message.type) {
    case 'batch':
      runOrFail(message.id, () => message.ops, false);
      return;
    case 'packed':
      runOrFail(message.id, () => unpackOps(message.buffer), true);
      return;
    case 'stats': {
      const cpu = threadCpuUs();
      post({
        type: 'stats',
        stats: { commits, operations, batchMs, writerUserUs: cpu.userUs, writerSystemUs: cpu.systemUs },
      });
      return;
    }
    case 'close':
      committer.close();
      db.close();
      post({ type: 'closed' });
      port.close();
      return;
  }
});
post({ type: 'ready' });
