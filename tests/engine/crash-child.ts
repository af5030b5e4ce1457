/**
 * The process that crash.test.ts kills. It runs producers and workers through
 * a real engine (real clock, durability full) on the data directory it is
 * given, and records in its ledger file, one line each, only after the
 * engine's promise resolved (so after the commit was durable):
 *
 *   E <payloadId> <jobId>          an enqueue was acknowledged
 *   R <jobId> <attempt>            a job was leased
 *   a <jobId> <attempt>            an ack is about to be sent (written before the call)
 *   A <jobId> <attempt>            the ack was acknowledged
 *
 * The ledger is written with writeSync to a regular file: once the call
 * returns, the line is in the kernel and survives a SIGKILL. (A pipe does
 * not give that: when it is full, Node queues stdout writes in the process,
 * and a kill loses them.) Stdout only says `ready` once the engine is open.
 *
 * Every ack carries the result `result:<jobId>`; with KEEP=1 the queue keeps
 * completed jobs (and their results) for an hour, else it deletes them on ack.
 *
 * Usage: crash-child.ts DATA_DIR LEDGER_FILE SEED [KEEP]
 */
import { openSync, writeSync } from 'node:fs';
import { systemClock } from '../../src/engine/clock.ts';
import { Engine } from '../../src/engine/engine.ts';
import { SeppError } from '../../src/engine/errors.ts';
import { defaultEngineOptions } from '../../src/engine/settings.ts';
import type { EnqueueRequest, LeasedJob } from '../../src/engine/types.ts';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { intsFrom, mulberry32 } from '../helpers/prng.ts';

const [dataDir, ledgerFile, seedArg, keepArg] = process.argv.slice(2);
if (dataDir === undefined || ledgerFile === undefined) {
  throw new Error('usage: crash-child.ts DATA_DIR LEDGER_FILE SEED');
}
const ledger = openSync(ledgerFile, 'a');
const seed = Number(seedArg ?? 1);

/** Leases are short so that leases of killed children expire, and are redelivered, in later cycles. */
const crashQueueSettings = {
  maxAttempts: 1000,
  defaultLeaseMs: 1500,
  completedRetentionMs: keepArg === '1' ? 3_600_000 : 0,
};

/** What every ack of `jobId` carries, so a check can tell each result belongs to its job. */
const resultOf = (jobId: string) => Buffer.from(`result:${jobId}`);

const int = intsFrom(mulberry32(seed));

function report(line: string): void {
  writeSync(ledger, `${line}\n`);
}

const store = openSqliteStore(dataDir, { durability: 'full' });
const engine = await Engine.open(
  store,
  { ...defaultEngineOptions(), queues: { crash: crashQueueSettings } },
  { clock: systemClock },
);
process.stdout.write('ready\n');

// If the parent never kills us (it died), stop on our own.
setTimeout(() => process.exit(0), 30_000);

/**
 * The producers pause while this many jobs are ready: what the children enqueue grows with how
 * fast this machine is at the moment, and the parent's last check delivers every job never
 * acked, so an unbounded backlog made the 50-cycle run's time depend on the load (225,137
 * enqueues and 172,603 jobs to deliver at the end ran past the test's 300 s once, against
 * 65,987 and 51,057 the run before). Kills still land amid enqueues: the workers drain a backlog
 * this size within the second a child lives, and the producers resume as they do.
 */
const maxReadyBacklog = 30_000;
let readyNow = 0;
async function watchBacklog(): Promise<void> {
  for (;;) {
    readyNow = (await engine.queueCounts()).get('crash')?.ready ?? 0;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

let produced = 0;
function request(): EnqueueRequest {
  const payloadId = `s${seed}-${produced++}`;
  return { queue: 'crash', type: 'load', payload: Buffer.from(payloadId), priority: int(0, 9) };
}

async function producer(): Promise<void> {
  for (;;) {
    if (readyNow > maxReadyBacklog) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      continue;
    }
    const kind = int(0, 9);
    if (kind < 4) {
      const r = request();
      const { jobId } = await engine.enqueue(r);
      report(`E ${Buffer.from(r.payload).toString()} ${jobId}`);
    } else {
      const requests = Array.from({ length: int(2, 30) }, request);
      const results =
        kind < 8
          ? await engine.enqueueBatch(requests)
          : await engine.enqueueAtomic(requests).then((r) => (r.committed ? r.results : []));
      results.forEach((result, i) => {
        if (result.ok) report(`E ${Buffer.from(requests[i]!.payload).toString()} ${result.jobId}`);
      });
    }
  }
}

/** A lease that ran out while we were slow is not a failure of the engine: skip the job. */
async function tolerateLostLease(call: Promise<unknown>): Promise<boolean> {
  try {
    await call;
    return true;
  } catch (error) {
    if (error instanceof SeppError && (error.code === 'lease_lost' || error.code === 'not_found'))
      return false;
    throw error;
  }
}

async function settle(job: LeasedJob): Promise<void> {
  const roll = int(0, 99);
  if (roll < 80) {
    report(`a ${job.id} ${job.attempt}`);
    if (
      await tolerateLostLease(engine.ack({ jobId: job.id, attempt: job.attempt, result: resultOf(job.id) }))
    ) {
      report(`A ${job.id} ${job.attempt}`);
    }
  } else if (roll < 90) {
    const directive = { kind: 'delay', delayMs: 0 } as const;
    await tolerateLostLease(
      engine.nack({ jobId: job.id, attempt: job.attempt, error: 'crash test', directive }),
    );
  } else if (roll < 92) {
    const directive = { kind: 'dead_letter' } as const;
    await tolerateLostLease(engine.nack({ jobId: job.id, attempt: job.attempt, error: 'poison', directive }));
  }
  // Otherwise the job is abandoned: its lease expires and it is delivered again.
}

async function worker(): Promise<void> {
  for (;;) {
    const jobs = await engine.reserve({ queues: ['crash'], maxJobs: int(1, 10), waitMs: 200 });
    for (const job of jobs) report(`R ${job.id} ${job.attempt}`);
    if (jobs.length > 1 && int(0, 3) === 0) {
      for (const job of jobs) report(`a ${job.id} ${job.attempt}`);
      const outcomes = await engine.ackBatch(
        jobs.map((j) => ({ jobId: j.id, attempt: j.attempt, result: resultOf(j.id) })),
      );
      outcomes.forEach((o, i) => {
        if (o.ok) report(`A ${jobs[i]!.id} ${jobs[i]!.attempt}`);
      });
    } else {
      await Promise.all(jobs.map(settle));
    }
  }
}

watchBacklog().catch((error: unknown) => {
  console.error('backlog watch failed', error);
  process.exit(2);
});
for (let i = 0; i < 4; i++) {
  producer().catch((error: unknown) => {
    console.error('producer failed', error);
    process.exit(2);
  });
  worker().catch((error: unknown) => {
    console.error('worker failed', error);
    process.exit(2);
  });
}
