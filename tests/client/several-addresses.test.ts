/**
 * Several servers in one address (clients/typescript/REFERENCE.md, "Several servers in one
 * address"): `ipv4:HOST1:PORT1,HOST2:PORT2`, grpc's own syntax. The channel takes the first
 * address that accepts a connection (grpc's pick_first) and stays on it; once that server is
 * gone, its calls and its Workers go to the next. Two real servers (SQLite: each its own
 * data, which is enough to see where a call went), the first stopped under a running Worker.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SeppClient } from '../../clients/typescript/src/index.ts';
import { within } from '../helpers/bounded.ts';
import { startTestServer } from '../helpers/server.ts';

test('a client given two servers in one address uses the first, and the second once the first stops', async () => {
  const first = await startTestServer();
  const second = await startTestServer();
  // As REFERENCE.md writes it.
  const client = SeppClient.connect(`ipv4:${first.address},${second.address}`, { apiKey: null });
  let firstStopped = false;
  try {
    // The first address takes it: the job is the first server's (each has its own SQLite file).
    const one = await client.enqueue('emails', 'welcome', 'hi');
    assert.equal((await first.server.engine.getJob(one.id)).state, 'ready');
    await assert.rejects(second.server.engine.getJob(one.id), /does not exist/);
    const ran: string[] = [];
    const worker = client.worker({
      queues: ['emails'],
      fallback: async (job) => {
        ran.push(job.id);
      },
    });
    const ranJob = (id: string, where: string) =>
      within(
        (async () => {
          while (!ran.includes(id)) await new Promise((resolve) => setTimeout(resolve, 20));
        })(),
        `the Worker ran the job enqueued on ${where}`,
      );
    await ranJob(one.id, 'the first server');

    await first.dispose();
    firstStopped = true;
    // The same client and Worker, now through the second address.
    const two = await within(
      (async () => {
        for (;;) {
          try {
            return await client.enqueue('emails', 'welcome', 'hi');
          } catch {
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
        }
      })(),
      'an enqueue through the second address',
    );
    // Only the second server is left to have stored it, and the Worker leased it there.
    await ranJob(two.id, 'the second server');
    await worker.close();
  } finally {
    await client.close();
    await second.dispose();
    if (!firstStopped) await first.dispose();
  }
});
