/**
 * The worker process that worker-death.test.ts kills: an SDK Worker that
 * leases jobs and never finishes them (its lease keeper extends them while
 * it lives). Prints `leased <jobId> <attempt>` for each job it starts.
 *
 * Usage: worker-death-child.ts ADDRESS QUEUE LEASE_MS CONCURRENCY
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { SeppClient } from '../../clients/typescript/src/index.ts';

const [address, queue, leaseMsArg, concurrencyArg] = process.argv.slice(2);
if (address === undefined || queue === undefined) {
  throw new Error('usage: worker-death-child.ts ADDRESS QUEUE LEASE_MS CONCURRENCY');
}

// If the parent never kills us (it died), stop on our own.
setTimeout(() => process.exit(0), 60_000).unref();

SeppClient.connect(address).worker({
  queues: [queue],
  concurrency: Number(concurrencyArg),
  leaseMs: Number(leaseMsArg),
  workerId: 'doomed',
  fallback: async (job) => {
    process.stdout.write(`leased ${job.id} ${job.attempt}\n`);
    // Mid-job until the kill.
    await sleep(120_000, undefined, { signal: job.signal });
  },
});
