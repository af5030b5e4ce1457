/**
 * What docs/protocol.md's "Queues" section says about a queue nobody has used,
 * checked against the server (issue 29, item 15: the page said ListDeadLetters
 * does not fail there, while the server, on purpose since round two, answers
 * NOT_FOUND). The RPCs the page lists are read from the page itself, so a
 * change to either side that makes them disagree fails here.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { type ServiceError, status } from '@grpc/grpc-js';
import { EventsRequest } from '../../clients/typescript/src/gen/sepp/v1/events.js';
import { unsetFilterFields } from '../helpers/proto-filter.ts';
import { call, startTestServer, type TestServer } from '../helpers/server.ts';

const page = readFileSync(new URL('../../docs/protocol.md', import.meta.url), 'utf8');
const section = page.slice(page.indexOf('## Queues'), page.indexOf('\n## ', page.indexOf('## Queues') + 1));

/** The RPC names (in backticks) between `from` and `to` in the section, flattened over line breaks. */
function listed(from: RegExp, to: RegExp): string[] {
  const text = section.replace(/\s+/g, ' ');
  const start = text.search(from);
  assert.ok(start >= 0, `the section says ${from}`);
  const rest = text.slice(start);
  const end = rest.search(to);
  assert.ok(end > 0, `the section says ${to}`);
  return [...rest.slice(0, end).matchAll(/`([A-Z][A-Za-z]+)`/g)].map((m) => m[1] ?? '');
}

const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => status.OK,
    (e: ServiceError) => e.code,
  );

describe('docs/protocol.md on a queue nobody has used', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ toml: '[limits]\nmax_wait_ms = 0\n' });
  });
  after(() => t.dispose());

  /** Each RPC that names a queue, called with `queue`; resolves with its status. */
  const calls = (queue: string): Record<string, () => Promise<status>> => {
    const c = t.client;
    const filter = { queue, type: '', states: [], group: '', ...unsetFilterFields };
    return {
      PauseQueue: () => codeOf(call(c, c.pauseQueue, { queue, allowMissing: false })),
      ResumeQueue: () => codeOf(call(c, c.resumeQueue, { queue, allowMissing: false })),
      DeleteQueue: () => codeOf(call(c, c.deleteQueue, { queue })),
      PurgeQueue: () => codeOf(call(c, c.purgeQueue, { requestKey: '', queue, background: false })),
      CancelJobs: () =>
        codeOf(call(c, c.cancelJobs, { requestKey: '', filter, dryRun: false, background: false })),
      UpdateJobs: () =>
        codeOf(
          call(c, c.updateJobs, {
            requestKey: '',
            filter,
            changes: {
              scheduleChange: { $case: 'runNow', value: true },
            },
            dryRun: false,
            background: false,
          }),
        ),
      SetQueueSettings: () => codeOf(call(c, c.setQueueSettings, { queue, settings: { max_attempts: '3' } })),
      ResetQueueSettings: () => codeOf(call(c, c.resetQueueSettings, { queue, keys: [], all: true })),
      ListDeadLetters: () =>
        codeOf(call(c, c.listDeadLetters, { queue, pageSize: 10, pageToken: '', reason: 0 })),
      RequeueDeadLetters: () =>
        codeOf(
          call(c, c.requeueDeadLetters, {
            requestKey: '',
            queue,
            jobIds: [],
            all: true,
            reason: 0,
            errorText: '',
            background: false,
          }),
        ),
      DeleteDeadLetters: () =>
        codeOf(
          call(c, c.deleteDeadLetters, {
            requestKey: '',
            queue,
            jobIds: [],
            all: true,
            reason: 0,
            errorText: '',
            background: false,
          }),
        ),
      ListQueues: () => codeOf(call(c, c.listQueues, { pageSize: 0, pageToken: '' })),
      Reserve: () =>
        codeOf(
          call(c, c.reserve, {
            maxResponseBytes: 0,
            queues: [queue],
            maxJobs: 1,
            leaseDurationMs: 0,
            waitTimeoutMs: 0,
            workerId: '',
          }),
        ),
      Events: () =>
        new Promise<status>((resolve) => {
          const stream = c.events(EventsRequest.fromPartial({ queues: [queue] }));
          stream.on('data', () => {
            resolve(status.OK);
            stream.cancel();
          });
          stream.on('error', (e: ServiceError) => resolve(e.code));
        }),
    };
  };

  test('the calls it says answer NOT_FOUND do, and create nothing', async () => {
    const rpcs = listed(/calls that name a queue nobody has used/i, /answer `NOT_FOUND`/);
    for (const rpc of rpcs) {
      const queue = `never-used-${rpc.toLowerCase()}`;
      const run = calls(queue)[rpc];
      assert.ok(run, `the page names ${rpc}: give this test a request for it`);
      assert.equal(status[await run()], 'NOT_FOUND', rpc);
      const queues = await call(t.client, t.client.listQueues, { pageSize: 0, pageToken: '' });
      assert.ok(!queues.queues.some((q) => q.name === queue), `${rpc} created ${queue}`);
    }
    assert.ok(rpcs.includes('ListDeadLetters') && rpcs.includes('SetQueueSettings'), rpcs.join());
  });

  test('the calls it says accept a name nobody has used do, and ListQueues does not list it', async () => {
    const rpcs = listed(
      /Calls that wait for or watch a queue|Reads \(/,
      /accept a name nobody has used|do not fail/,
    );
    for (const rpc of rpcs) {
      const queue = `not-yet-used-${rpc.toLowerCase()}`;
      const run = calls(queue)[rpc];
      assert.ok(run, `the page names ${rpc}: give this test a request for it`);
      assert.equal(status[await run()], 'OK', rpc);
      const queues = await call(t.client, t.client.listQueues, { pageSize: 0, pageToken: '' });
      assert.ok(!queues.queues.some((q) => q.name === queue), `ListQueues lists ${queue}`);
    }
    assert.ok(rpcs.includes('Reserve') && rpcs.includes('Events'), rpcs.join());
  });
});
