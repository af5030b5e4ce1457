/**
 * A worker: runs the `send` jobs of the `emails` queue, ten at a time, until
 * Ctrl-C (or SIGTERM), then lets running jobs finish and exits. CommonJS (.cjs);
 * in an ES module, `import { SeppClient } from '@sepp-queue/client';` instead.
 *
 *   SEPP_SERVER=127.0.0.1:50051 node worker.cjs
 *
 * The marked region is the quickstart in docs/quickstart.md (a test keeps them equal).
 */
// #region quickstart
const { SeppClient } = require('@sepp-queue/client');

const client = SeppClient.connect(process.env.SEPP_SERVER ?? '127.0.0.1:50051');
client.worker({
  queues: ['emails'],
  concurrency: 10,
  handlers: {
    send: async (job) => {
      const { to } = job.json();
      console.log(`sending to ${to}`); // Return to complete the job; throw to retry it later.
    },
  },
});
process.once('SIGINT', () => client.close()); // Ctrl-C: lets running jobs finish, then exits.
process.once('SIGTERM', () => client.close());
// #endregion quickstart
