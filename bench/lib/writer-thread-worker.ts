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
import { GroupCommitter } from '../../src/store/sqlite/group-commit.ts';
import { openDataDir } from '../../src/store/sqlite/open.ts';
import { prepareStatements } from '../../src/store/sqlite/statements.ts';
import { packResults, unpackOps } from './writer-codec.ts';
import {
  createQueue,
  type FromWriter,
  type Op,
  type OpResult,
  runOp,
  type SettledResult,
  type ToWriter,
  threadCpuUs,
} from './writer-ops.ts';

if (parentPort === null) throw new Error('writer-thread-worker.ts runs as a worker thread only');
const port = parentPort;
const { dataDir } = workerData as { dataDir: string };

const db = openDataDir(dataDir, { durability: 'full' });
const sql = prepareStatements(db);
let commits = 0;
let operations = 0;
let batchMs = 0;
const committer = new GroupCommitter(db, {
  commitFailed: (cause) => new Error(`commit failed: ${String(cause)}`, { cause }),
  closed: () => new Error('the writer is closed'),
  onBatch: (stats) => {
    commits++;
    operations += stats.operations;
    batchMs += stats.durationMs;
  },
});
createQueue(sql, Date.now());

const post = (message: FromWriter) => port.postMessage(message);

async function runBatch(id: number, ops: Op[], packed: boolean): Promise<void> {
  const pending = ops.map((op) => committer.submit((): OpResult => runOp(sql, op)));
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
