/**
 * A producer: enqueues two jobs and exits.
 *
 *   SEPP_SERVER=127.0.0.1:50051 npx tsx examples/producer.ts
 *
 * The marked region is the quickstart in docs/quickstart.md (a test keeps them equal).
 */
// #region quickstart
import { SeppClient } from '@sepp-queue/client';

const client = SeppClient.connect(process.env.SEPP_SERVER ?? '127.0.0.1:50051');
for (const to of ['ada@example.com', 'grace@example.com']) {
  const { id } = await client.enqueueJson('emails', 'send', { to });
  console.log(`enqueued ${id} for ${to}`);
}
await client.close();
// #endregion quickstart
