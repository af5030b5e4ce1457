/**
 * The README's first job: a worker for the `send` jobs of the `emails` queue, run from a
 * checkout with `npx tsx examples/first-job.ts` while `npm start` serves. The marked
 * region is the README's copy (tests/packaging/readme-first-job.test.ts keeps them equal
 * and runs it).
 */
// #region readme
import { SeppClient, type WorkerJob } from '@sepp-queue/client';

const client = SeppClient.connect(); // SEPP_SERVER, else 127.0.0.1:50051; a key from SEPP_API_KEY
client.worker({
  queues: ['emails'],
  handlers: {
    // Return to complete the job; throw to retry it later.
    send: async (job: WorkerJob<{ to: string }>) => console.log(`sending to ${job.data.to}`),
  },
});
process.once('SIGINT', () => void client.close()); // Ctrl-C: lets running jobs finish, then exits.
// #endregion readme
