/**
 * Batches through gRPC and the TypeScript SDK (issue 33): create, add, seal, read;
 * the completion job a worker gets, with the batch's counts and members; a running
 * member fanning out into its own sealed batch; the refusals with their status codes.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { status } from '@grpc/grpc-js';
import {
  type AddToBatchRequest,
  type AddToBatchResponse,
  Batch,
  BatchState,
} from '../../clients/typescript/src/gen/sepp/v1/batch.js';
import { LeasedJob } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import { QueueServiceService } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import type { WorkRequest, WorkResponse } from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { Flow, SeppClient, SeppError } from '../../clients/typescript/src/index.ts';
import { serverAndClient } from '../helpers/sdk-server.ts';
import { startTestServer } from '../helpers/server.ts';
import { listenOnLoopback } from '../helpers/stand-in-server.ts';
import { until } from './helpers.ts';

const escaped = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('batches over gRPC', () => {
  const served = serverAndClient();

  async function runOne(queue: string, fail = false): Promise<string> {
    const [leased] = await served.client.reserve({ queues: [queue] });
    assert.ok(leased, `a job of ${queue} should be ready`);
    if (fail) await served.client.nack(leased, { error: 'boom', deadLetter: true });
    else await served.client.ack(leased);
    return leased.id;
  }

  async function codeOf(promise: Promise<unknown>): Promise<string> {
    try {
      await promise;
    } catch (error) {
      assert.ok(error instanceof SeppError, String(error));
      return error.code;
    }
    assert.fail('the call should have failed');
  }

  test('onDeath comes once, when the first member dies, naming it', async () => {
    const { batch } = await served.client.createBatch({
      onDeath: { queue: 'bd-alerts', type: 'page', json: { team: 'etl' } },
      jobs: [0, 1, 2].map((part) => ({ queue: 'bd-parts', type: 'part', json: { part } })),
    });
    assert.deepEqual([batch.hasOnDeath, batch.deathJobId, batch.firstDeadId], [true, null, null]);
    const subscription = served.client.events({ jobIds: [batch.id], kinds: ['batch_first_death'] });
    await subscription.caughtUp;
    const first = await runOne('bd-parts', true);
    for await (const event of subscription) {
      assert.deepEqual(
        [event.kind, event.queue, event.batch?.firstDeadId, event.batch?.dead],
        ['batch_first_death', 'bd-alerts', first, 1],
      );
      break;
    }
    subscription.close();
    await runOne('bd-parts', true);
    const read = await served.client.getBatch(batch.id);
    assert.deepEqual([read.batch.state, read.batch.dead, read.batch.firstDeadId], ['open', 2, first]);
    const alerts = await served.client.reserve({ queues: ['bd-alerts'], maxJobs: 10 });
    assert.deepEqual(
      alerts.map((job) => [job.id, job.batchId]),
      [[read.batch.deathJobId, null]],
      'a completion job is no member',
    );
    const { batch: told, data } = alerts[0]!.json() as {
      batch: { outcome: string; pending: number; firstDead: unknown };
      data: unknown;
    };
    assert.deepEqual(
      [told.outcome, told.pending, told.firstDead, data],
      ['death', 2, { jobId: first, error: 'boom' }, { team: 'etl' }],
    );
  });

  test('a sealed batch: the completion job comes once the last member ended, with counts and members', async () => {
    const { batch, results } = await served.client.createBatch({
      onComplete: { queue: 'b-done', type: 'summarize', json: { day: '2026-12-05' } },
      onSuccess: { queue: 'b-ok', type: 'celebrate' },
      jobs: [
        { queue: 'b-parts', type: 'part', json: { part: 0 } },
        { queue: 'b-parts', type: 'part', json: { part: 1 } },
      ],
      seal: true,
    });
    assert.equal(batch.state, 'sealed');
    assert.deepEqual(
      results.map((r) => r.ok),
      [true, true],
    );
    const members = results.map((r) => (r.ok ? r.id : ''));
    await runOne('b-parts');
    assert.deepEqual(
      await served.client.reserve({ queues: ['b-done'] }),
      [],
      'nothing before the last member',
    );
    await runOne('b-parts', true);
    const read = await served.client.getBatch(batch.id);
    assert.deepEqual(
      [read.batch.state, read.batch.completed, read.batch.dead, read.batch.cancelled],
      ['ended', 1, 1, 0],
    );
    assert.deepEqual(
      read.members.map((m) => [m.jobId, m.memberState]).sort(),
      [
        [members[0], 'completed'],
        [members[1], 'dead'],
      ].sort(),
    );
    assert.equal(read.batch.successJobId, null, 'a member died: no on_success');
    assert.deepEqual(await served.client.reserve({ queues: ['b-ok'] }), []);
    const [done] = await served.client.reserve({ queues: ['b-done'] });
    assert.equal(done?.id, read.batch.completeJobId);
    assert.deepEqual(done?.json(), {
      batch: {
        id: batch.id,
        outcome: 'complete',
        completed: 1,
        dead: 1,
        cancelled: 0,
        members,
        membersOmitted: false,
      },
      data: { day: '2026-12-05' },
    });
    await served.client.ack(done!);
  });

  test('an open batch: added to over time, a running member adds to it once sealed', async () => {
    const { batch } = await served.client.createBatch({ onComplete: { queue: 'b2-done', type: 'done' } });
    assert.equal(batch.state, 'open');
    const added = await served.client.addToBatch(batch.id, [{ queue: 'b2-fan', type: 'fan-out' }], {
      seal: true,
    });
    assert.equal(added.batch.state, 'sealed');
    const [fanOut] = await served.client.reserve({ queues: ['b2-fan'] });
    assert.ok(fanOut);
    assert.equal(fanOut.batchId, batch.id, 'a leased member carries its batch id');
    assert.equal(
      await codeOf(served.client.addToBatch(batch.id, [{ queue: 'b2-parts', type: 'part' }])),
      'failed_precondition',
    );
    const more = await served.client.addToBatch(
      fanOut.batchId!,
      [
        { queue: 'b2-parts', type: 'part' },
        { queue: 'b2-parts', type: 'part' },
      ],
      // Outside a handler the SDK knows no running member: the caller passes its lease's token.
      { fromMember: fanOut.id, fromMemberToken: fanOut.leaseToken! },
    );
    assert.equal(more.batch.members, 3);
    await served.client.ack(fanOut);
    await runOne('b2-parts');
    assert.equal((await served.client.getBatch(batch.id)).batch.state, 'sealed');
    await runOne('b2-parts');
    const ended = (await served.client.getBatch(batch.id, { membersLimit: 0 })).batch;
    assert.deepEqual([ended.state, ended.completed], ['ended', 3]);
    assert.ok(ended.completeJobId);
    assert.equal((await served.client.sealBatch(batch.id)).state, 'ended', 'sealing again changes nothing');
  });

  test('a handler’s lease token goes only to the server that leased it, not to another the process uses', async () => {
    // The same process talks to a second server (another deployment, a typo'd address): an add
    // fromMember through its client sends no token (that server answers the token is required).
    const other = await startTestServer();
    const toOther = SeppClient.connect(other.address);
    const toSame = SeppClient.connect(served.server.address);
    try {
      const { batch } = await served.client.createBatch({
        jobs: [{ queue: 'bt-fan', type: 'fan' }],
        seal: true,
      });
      let tried!: (outcome: { refused: unknown; added: number }) => void;
      const outcome = new Promise<{ refused: unknown; added: number }>((resolve) => {
        tried = resolve;
      });
      const part = [{ queue: 'bt-part', type: 'part' }];
      const worker = served.client.worker({
        queues: ['bt-fan'],
        handlers: {
          fan: async (job) => {
            const refused = await toOther.addToBatch(job.batchId!, part, { fromMember: job.id }).then(
              () => undefined,
              (error: unknown) => error,
            );
            // Another client of the worker's own target still proves the member.
            const added = await toSame.addToBatch(job.batchId!, part, { fromMember: job.id });
            tried({ refused, added: added.batch.members });
          },
        },
      });
      worker.on('failed', (_job, error) => tried({ refused: error, added: 0 }));
      const { refused, added } = await outcome;
      await worker.close();
      assert.equal(added, 2);
      assert.ok(refused instanceof SeppError, String(refused));
      assert.equal(refused.code, 'permission_denied');
      assert.match(
        refused.message,
        new RegExp(
          `^fromMember: member \\S+ is not running on this client's server \\(sepp at ${escaped(other.address)} ` +
            `\\(plaintext\\)\\): its handler runs in this process on a worker of sepp at ` +
            `${escaped(served.server.address)} \\(plaintext\\)`,
        ),
      );
      // No token reached it, and its refusal reads in the SDK's names.
      assert.match(refused.message, /The server answered: fromMemberToken: required/, 'no token reached it');
      assert.doesNotMatch(refused.message, /from_member|lease_token/);
      // Outside any handler the SDK has no token for it: it says so.
      const [member] = (await served.client.getBatch(batch.id)).members;
      await assert.rejects(
        toSame.addToBatch(batch.id, part, { fromMember: member!.jobId }),
        /no handler of it runs in this process, so the SDK has no lease token to send/,
      );
    } finally {
      await toOther.close();
      await toSame.close();
      await other.dispose();
    }
  });

  test('a flow as one thing: GetJob links, GetFlow, CancelFlow; CancelBatch', async () => {
    const ids = await served.client.enqueueFlow(
      new Flow()
        .add('extract', { queue: 'f-extract', type: 'extract' })
        .add('load', { queue: 'f-load', type: 'load', after: ['extract'] }),
    );
    const load = await served.client.getJob(ids.load!.id);
    assert.deepEqual(
      load.dependencies.map((l) => [l.id, l.name, l.state, l.edge]),
      [[ids.extract!.id, 'extract', 'ready', 'pending']],
    );
    const extract = await served.client.getJob(ids.extract!.id);
    assert.deepEqual(
      extract.dependents.map((l) => [l.id, l.type, l.state, l.edge]),
      [[ids.load!.id, 'load', 'waiting', 'pending']],
    );
    assert.equal(extract.batchId, null);
    const flow = await served.client.getFlow(ids.load!.id);
    assert.deepEqual(
      flow.jobs.map((j) => [j.type, j.state]),
      [
        ['extract', 'ready'],
        ['load', 'waiting'],
      ],
    );
    assert.deepEqual(flow.edges, [
      { jobId: ids.load!.id, dependsOn: ids.extract!.id, state: 'pending', name: 'extract' },
    ]);
    assert.equal((await served.client.getFlow(ids.load!.id, { limit: 1 })).jobs.length, 1);
    // Over the bound (or below 0) is refused naming it, as both JSON APIs answer 400, not clamped.
    for (const limit of [20_001, -1]) {
      await assert.rejects(served.client.getFlow(ids.load!.id, { limit }), (e: unknown) => {
        assert.ok(e instanceof SeppError);
        assert.equal(e.grpcCode, status.INVALID_ARGUMENT);
        assert.match(e.message, new RegExp(`^limit is ${limit}; it must be an integer from 1 to 20000`));
        return true;
      });
    }
    assert.deepEqual([flow.truncated, flow.edgesLimited], [false, false]);
    assert.deepEqual(await served.client.cancelFlow(ids.extract!.id), { cancelled: 2, cancelRequested: 0 });
    assert.equal((await served.client.getJob(ids.load!.id)).state, 'cancelled');

    const { batch, results } = await served.client.createBatch({
      onComplete: { queue: 'f-done', type: 'done' },
      jobs: [{ queue: 'f-members', type: 'm' }],
      seal: true,
    });
    const member = results[0]!;
    assert.ok(member.ok);
    assert.equal((await served.client.getJob(member.id)).batchId, batch.id);
    assert.deepEqual(await served.client.cancelBatch(batch.id), { cancelled: 1, cancelRequested: 0 });
    const ended = (await served.client.getBatch(batch.id)).batch;
    assert.deepEqual([ended.state, ended.cancelled], ['ended', 1]);
  });

  test('events: released for a waiting job, batch_ended for a batch (its id as the job filter)', async () => {
    const { batch } = await served.client.createBatch({ onComplete: { queue: 'e-done', type: 'done' } });
    const first = await served.client.enqueue('e-a', 'a');
    const second = await served.client.enqueue('e-b', 'b', undefined, { dependsOn: [first.id] });
    const subscription = served.client.events({
      jobIds: [batch.id, second.id],
      kinds: ['released', 'batch_ended'],
    });
    await subscription.caughtUp;
    const seen: { kind: string; jobId: string; completed: number | null }[] = [];
    const reading = (async () => {
      for await (const event of subscription) {
        seen.push({ kind: event.kind, jobId: event.jobId, completed: event.batch?.completed ?? null });
        if (seen.length === 2) return;
      }
    })();
    await runOne('e-a');
    await served.client.addToBatch(batch.id, [{ queue: 'e-m', type: 'm' }], { seal: true });
    await runOne('e-m');
    await reading;
    subscription.close();
    assert.deepEqual(seen, [
      { kind: 'released', jobId: second.id, completed: null },
      { kind: 'batch_ended', jobId: batch.id, completed: 1 },
    ]);
  });

  test('refusals: an unknown batch, a bad id, a completion job that is not JSON', async () => {
    assert.equal(await codeOf(served.client.getBatch('01900000-0000-7000-8000-000000000000')), 'not_found');
    assert.equal(await codeOf(served.client.sealBatch('nope')), 'invalid_argument');
    assert.equal(
      await codeOf(
        served.client.createBatch({ onComplete: { queue: 'b3', type: 'done', payload: 'not json' } }),
      ),
      'invalid_argument',
    );
    assert.equal(
      await codeOf(
        served.client.createBatch({ onComplete: { queue: 'b3', type: 'done', idempotencyKey: 'k' } }),
      ),
      'invalid_argument',
    );
  });
});

test('a worker adds from a member to a server older than lease tokens: the SDK sends the attempt too, to it alone', async () => {
  // Such a server (schema 30) reads from_member_attempt and refuses an add without it
  // (INVALID_ARGUMENT); a server of this version reads the token alone. Sending both lets
  // workers be upgraded before their servers (docs/upgrading.md, "To schema 31").
  const adds: AddToBatchRequest[] = [];
  const server = new grpc.Server();
  server.addService(QueueServiceService, {
    work: (call: grpc.ServerDuplexStream<WorkRequest, WorkResponse>) => {
      call.on('data', (message: WorkRequest) => {
        const kind = message.kind;
        if (kind?.$case === 'subscribe') {
          const job = LeasedJob.fromPartial({
            jobId: 'member-1',
            queue: 'q',
            type: 'fan',
            attempt: 3,
            maxAttempts: 5,
            leaseDeadlineMs: Date.now() + 60_000,
            // No lease token: such a server has none.
            batchId: 'batch-1',
          });
          call.write({ kind: { $case: 'job', value: job } });
        }
        // Its ack is left unanswered: the test ends with the handler.
      });
      call.on('end', () => call.end());
    },
    addToBatch: (
      call: grpc.ServerUnaryCall<AddToBatchRequest, AddToBatchResponse>,
      callback: grpc.sendUnaryData<AddToBatchResponse>,
    ) => {
      adds.push(call.request);
      if (call.request.fromMemberAttempt < 1) {
        callback({
          code: status.INVALID_ARGUMENT,
          details: "from_member_attempt: give the attempt of the member's lease",
        });
        return;
      }
      callback(null, { batch: Batch.fromPartial({ id: 'batch-1', state: BatchState.SEALED }), results: [] });
    },
  });
  const address = await listenOnLoopback(server);
  // A second port of the same stand-in: to the SDK another target, as another deployment's
  // older server would be. An add through its client carries neither token nor attempt.
  const otherAddress = await listenOnLoopback(server);
  const client = SeppClient.connect(address);
  const other = SeppClient.connect(otherAddress);
  const outcomes: string[] = [];
  const worker = client.worker({
    queues: ['q'],
    concurrency: 1,
    logger: { info() {}, warn() {}, error() {} },
    fallback: async (job) => {
      await other.addToBatch(job.batchId!, [{ queue: 'q', type: 'part' }], { fromMember: job.id }).then(
        () => outcomes.push('added elsewhere'),
        (error: unknown) => outcomes.push(error instanceof SeppError ? error.code : String(error)),
      );
      try {
        await client.addToBatch(job.batchId!, [{ queue: 'q', type: 'part' }], { fromMember: job.id });
        outcomes.push('added');
      } catch (error) {
        outcomes.push(String(error));
      }
    },
  });
  try {
    await until(() => outcomes.length === 2, 'the handler ran');
    assert.deepEqual(outcomes, ['invalid_argument', 'added']);
    assert.deepEqual(
      adds.map((a) => [a.fromMember, a.fromMemberToken, a.fromMemberAttempt]),
      [
        ['member-1', '', 0],
        ['member-1', '', 3],
      ],
    );
  } finally {
    await worker.close({ timeoutMs: 0 });
    await client.close();
    await other.close();
    server.forceShutdown();
  }
});
