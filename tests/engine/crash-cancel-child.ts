/**
 * The process crash-cancel.test.ts kills. A worker leases jobs, an operator
 * cancels them while they run, and the worker answers some cancels with a
 * nack and leaves the others unanswered. It records in its ledger file, one
 * line each, only after the engine's promise resolved (so once durable):
 *
 *   C <jobId>   the cancel of a leased job was acknowledged
 *   N <jobId>   the worker's nack after it was acknowledged (the job is cancelled)
 *
 * The ledger is written with writeSync, so a line that was written survives
 * the SIGKILL. Stdout says `ready` once the engine is open.
 *
 * Usage: crash-cancel-child.ts DATA_DIR LEDGER_FILE SEED
 */
import { openSync, writeSync } from 'node:fs';
import { systemClock } from '../../src/engine/clock.ts';
import { Engine } from '../../src/engine/engine.ts';
import { defaultEngineOptions } from '../../src/engine/settings.ts';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { intsFrom, mulberry32 } from '../helpers/prng.ts';

const [dataDir, ledgerFile, seedArg] = process.argv.slice(2);
if (dataDir === undefined || ledgerFile === undefined) {
  throw new Error('usage: crash-cancel-child.ts DATA_DIR LEDGER_FILE SEED');
}
const ledger = openSync(ledgerFile, 'a');
const int = intsFrom(mulberry32(Number(seedArg ?? 1)));
const report = (line: string) => writeSync(ledger, `${line}\n`);

const store = openSqliteStore(dataDir, { durability: 'full' });
// Leases outlive the child: only the cancel (or its answer) can end them.
const engine = await Engine.open(
  store,
  { ...defaultEngineOptions(), queues: { cc: { maxAttempts: 5, defaultLeaseMs: 600_000 } } },
  { clock: systemClock },
);
process.stdout.write('ready\n');
setTimeout(() => process.exit(0), 30_000);

const operator = { actor: 'key:ops', action: 'job.cancel', target: 'job' };

async function worker(): Promise<void> {
  for (;;) {
    await engine.enqueueBatch(
      Array.from({ length: 10 }, () => ({ queue: 'cc', type: 't', payload: Buffer.from('x') })),
    );
    const leased = await engine.reserve({ queues: ['cc'], maxJobs: 10, workerId: `w${process.pid}` });
    await Promise.all(
      leased.map(async (job) => {
        await engine.cancel(job.id, { ...operator, target: `job:${job.id}` });
        report(`C ${job.id}`);
        if (int(0, 1) === 0) return; // this worker never answers
        await engine.nack({ jobId: job.id, attempt: job.attempt, error: 'stopped: cancelled' });
        report(`N ${job.id}`);
      }),
    );
  }
}

void Promise.all([worker(), worker(), worker()]);
