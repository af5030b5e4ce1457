/**
 * A worker: runs the `send` jobs of the `emails` queue, ten at a time, until
 * Ctrl-C (or SIGTERM), then lets running jobs finish and exits. CommonJS (.cjs);
 * in an ES module, `import { SeppClient } from '@sepp-queue/client';` instead.
 *
 *   SEPP_SERVER=127.0.0.1:50051 SEPP_API_KEY=sepp_… node worker.cjs
 *
 * The marked region is the quickstart in docs/quickstart.md (a test keeps them equal).
 */
// #region quickstart
const { SeppClient } = require('@sepp-queue/client');

// The server and the API key, as in producer.mjs.
const client = SeppClient.connect(process.env.SEPP_SERVER, { apiKey: process.env.SEPP_API_KEY });
const worker = client.worker({
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
// A refused API key stops the worker: say so in one line and exit 1.
worker.wait().catch((error) => {
  console.error(`worker: ${error.message}`);
  process.exitCode = 1;
});
// #endregion quickstart
