/**
 * `LeasedJob.flow_limited` (docs/protocol.md, "Working"): set on every job leased from a queue
 * that has a flow limit at that moment — `max_leased`, `group_max_leased`, a rate limit or a
 * group rate limit — and on no other, over Reserve, the Work stream and the HTTP reserve
 * (`flowLimited`); it follows the queue's settings as they change at run time
 * (SetQueueSettings, a config reload). The lease path reads the settings from the queue
 * registry, never from the store (reserve.ts), so the SQLite store shows it for both.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SeppClient } from '../../clients/typescript/src/index.ts';
import { apiCall } from '../helpers/http-api.ts';
import { startTestServer, type TestServer, testJob } from '../helpers/server.ts';
import { streamTransport, type Transport, unaryTransport } from '../helpers/transports.ts';

const toml = `
[queues.capped]
max_leased = 4
[queues.paced]
rate_limit_leases = 100
rate_limit_period_ms = "1s"
[queues.grouped]
group_max_leased = 2
[queues.group-paced]
group_rate_limit_leases = 100
[queues.free]
max_attempts = 3
`;

describe('LeasedJob.flow_limited', () => {
  let t: TestServer;
  let sdk: SeppClient;
  let transports: Transport[];
  before(async () => {
    t = await startTestServer({ toml, http: true });
    sdk = SeppClient.connect(t.address);
    transports = [unaryTransport(t.client), streamTransport(t.client)];
  });
  after(async () => {
    for (const transport of transports) transport.close();
    await sdk.close();
    await t.dispose();
  });

  /** What one job of `queue` says, leased over each transport and over HTTP (each acked). */
  const flagsOf = async (queue: string): Promise<boolean[]> => {
    const flags: boolean[] = [];
    // Jobs of the queues with group limits have a group; the others none (the plain lease path).
    const job = () => testJob(queue, queue.startsWith('group') ? { group: 'g' } : {});
    for (const transport of transports) {
      await transport.enqueue(job());
      const leased = await transport.lease(queue);
      flags.push(leased.flowLimited);
      await transport.ack(leased);
    }
    // Left leased: each queue's limits leave room for the few this test leaves.
    await transports[0]!.enqueue(job());
    const answer = await apiCall<{ jobs: { flowLimited: boolean }[] }>(t.httpUrl, '/v1/reserve', {
      body: { queues: [queue] },
    });
    assert.equal(answer.status, 200, answer.text);
    flags.push(answer.json.jobs[0]!.flowLimited);
    return flags;
  };
  const limited = [true, true, true];
  const unlimited = [false, false, false];

  test('set for each kind of flow limit, over Reserve, the Work stream and HTTP; not without one', async () => {
    for (const queue of ['capped', 'paced', 'grouped', 'group-paced']) {
      assert.deepEqual(await flagsOf(queue), limited, queue);
    }
    assert.deepEqual(await flagsOf('free'), unlimited);
  });

  test('follows a run-time change (SetQueueSettings and its reset) and a config reload', async () => {
    await sdk.setQueueSettings('free', { rate_limit_leases: '50' });
    assert.deepEqual(await flagsOf('free'), limited, 'a rate limit set at run time');
    await sdk.resetQueueSettings('free', ['rate_limit_leases']);
    assert.deepEqual(await flagsOf('free'), unlimited, 'reset: the file has none');

    await sdk.setQueueSettings('capped', { max_leased: '0' });
    assert.deepEqual(await flagsOf('capped'), unlimited, 'max_leased lifted at run time');
    await sdk.resetQueueSettings('capped', ['max_leased']);

    t.writeConfig(toml.replace('max_attempts = 3', 'max_leased = 9').replace('max_leased = 4', ''));
    assert.equal((await t.server.reload({ actor: 'test' })).applied, true);
    assert.deepEqual(await flagsOf('free'), limited, 'max_leased added by the reload');
    assert.deepEqual(await flagsOf('capped'), unlimited, 'max_leased removed by the reload');
  });
});
