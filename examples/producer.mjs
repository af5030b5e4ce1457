/**
 * A producer: enqueues two jobs and exits. An ES module (.mjs); in a CommonJS file,
 * `const { SeppClient } = require('@sepp-queue/client');` instead of the import.
 *
 *   SEPP_SERVER=127.0.0.1:50051 node producer.mjs
 *
 * The marked region is the quickstart in docs/quickstart.md (a test keeps them equal).
 */
// #region quickstart
import { SeppClient } from '@sepp-queue/client';

const client = SeppClient.connect(process.env.SEPP_SERVER ?? '127.0.0.1:50051');

async function main() {
  for (const to of ['ada@example.com', 'grace@example.com']) {
    const { id } = await client.enqueueJson('emails', 'send', { to });
    console.log(`enqueued ${id} for ${to}`);
  }
}

main()
  .catch((error) => {
    console.error(error);
    process.exitCode = 1;
  })
  .finally(() => client.close());
// #endregion quickstart
