/**
 * A producer: enqueues two jobs and exits. An ES module (.mjs); in a CommonJS file,
 * `const { SeppClient } = require('@sepp-queue/client');` instead of the import.
 *
 *   SEPP_SERVER=127.0.0.1:50051 SEPP_API_KEY=sepp_… node producer.mjs
 *
 * The marked region is the quickstart in docs/quickstart.md (a test keeps them equal).
 */
// #region quickstart
import { SeppClient } from '@sepp-queue/client';

// The server (default 127.0.0.1:50051) and the API key (none: a server on 127.0.0.1 without
// keys needs none), from where `sepp admin new-api-key` says to put them.
const client = SeppClient.connect(process.env.SEPP_SERVER, { apiKey: process.env.SEPP_API_KEY });

async function main() {
  for (const to of ['ada@example.com', 'grace@example.com']) {
    const { id } = await client.enqueueJson('emails', 'send', { to });
    console.log(`enqueued ${id} for ${to}`);
  }
}

main()
  .catch((error) => {
    console.error(`producer: ${error.message}`); // One line, e.g. that the server needs an API key.
    process.exitCode = 1;
  })
  .finally(() => client.close());
// #endregion quickstart
