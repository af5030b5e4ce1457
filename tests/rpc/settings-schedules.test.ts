/**
 * Run-time queue settings and the config's [[schedules]]: an override that
 * refuses a schedule's job (here `allowed_types`) must not keep the server
 * from starting again. The config's schedules are checked against the
 * config's queue settings, as `sepp config check` checks them; the override
 * then refuses the schedule's jobs, which the schedule's outcome reports.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SeppClient, SeppError } from '../../clients/typescript/src/index.ts';
import { startTestServer } from '../helpers/server.ts';

test("an override that refuses a config schedule's job still lets the server restart; the job is refused", async () => {
  let t = await startTestServer({
    toml: '[queues.r]\n[[schedules]]\nname = "nightly"\ncron = "30 2 * * *"\nqueue = "r"\ntype = "build"\n',
  });
  let sdk = SeppClient.connect(t.address);
  try {
    await sdk.setQueueSettings('r', { allowed_types: ['other'] });
    await sdk.close();
    t = await t.restart();
    sdk = SeppClient.connect(t.address);
    assert.deepEqual(
      (await sdk.schedules.list()).map((s) => s.name),
      ['nightly'],
    );
    const refused = await sdk.schedules.trigger('nightly').then(
      () => undefined,
      (error: unknown) => error,
    );
    assert.ok(refused instanceof SeppError, String(refused));
    assert.match(refused.message, /job type build is not allowed on queue r/);
  } finally {
    await sdk.close();
    await t.dispose();
  }
});
