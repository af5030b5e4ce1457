/**
 * A worker: runs the `send` jobs of the `emails` queue, ten at a time, until
 * Ctrl-C (or SIGTERM), then lets running jobs finish and exits.
 *
 *   SEPP_SERVER=127.0.0.1:50051 npx tsx examples/worker.ts
 *
 * The marked region is the quickstart in docs/quickstart.md (a test keeps them equal).
 */
// #region quickstart
import { SeppClient } from '@sepp-queue/client';

const client = SeppClient.connect(process.env.SEPP_SERVER ?? '127.0.0.1:50051');
client.worker({
  queues: ['emails'],
  concurrency: 10,
  handlers: {
    send: async (job) => {
      const { to } = job.json<{ to: string }>();
      console.log(`sending to ${to}`); // Return to complete the job; throw to retry it later.
    },
  },
});
process.once('SIGINT', () => void client.close()); // Lets running jobs finish.
// #endregion quickstart
process.once('SIGTERM', () => void client.close());
