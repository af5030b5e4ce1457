/**
 * Every admin RPC over gRPC writes one audit entry when it succeeds, in the
 * same transaction as its change (issue 17): a table with one row per admin
 * RPC that changes something, checked against the access table's admin-only
 * RPCs, so a new admin RPC without a row fails here. Each entry names the key
 * (`key:ops`), the action, the target, the door (`via: grpc`) and the count.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type * as grpc from '@grpc/grpc-js';
import { type Metadata, status } from '@grpc/grpc-js';
import type { BackupChunk } from '../../clients/typescript/src/gen/sepp/v1/admin.js';
import type { QueueServiceClient } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import type { ScheduleSpec } from '../../clients/typescript/src/gen/sepp/v1/schedule.js';
import {
  expected,
  keys,
  keysToml,
  metadataFor,
  missingJobId,
  protoScheduleSpec,
} from '../helpers/access-table.ts';
import { unsetFilterFields } from '../helpers/proto-filter.ts';
import { call, startTestServer, type TestServer, testJob } from '../helpers/server.ts';
import { testStoreKind } from '../helpers/test-store.ts';

const priority = (value: number) => ({ $case: 'priority' as const, value });

/** A schedule of the row's own, ticking hourly onto its queue. */
const spec = (name: string, type = 't'): ScheduleSpec => protoScheduleSpec(name, name, '0 * * * *', type);

async function createSchedule(c: QueueServiceClient, md: Metadata, name: string): Promise<void> {
  await call(c, c.createSchedule, { schedule: spec(name) }, md);
}

/**
 * What each admin RPC writes to the audit log when the `ops` admin key calls
 * it successfully: one row per RPC that changes something (ListAuditEntries
 * only reads it). `run` sets up what the call acts on and makes the call;
 * the entry must name the key, the action, the target, the door (`via`) and
 * the outcome's count.
 */
interface AuditRow {
  /** `queue` is the row's own. */
  run(c: QueueServiceClient, md: Metadata, queue: string): Promise<{ target: string }>;
  action: string;
  /** Details the entry must carry (besides `via`). */
  details: Record<string, unknown>;
}

async function enqueueTo(
  c: QueueServiceClient,
  md: Metadata,
  auditQueue: string,
  jobs: number,
  delayMs = 0,
  group = '',
): Promise<string[]> {
  const schedule = delayMs > 0 ? { $case: 'delayMs' as const, value: delayMs } : undefined;
  const { results } = await call(
    c,
    c.enqueueBatch,
    { jobs: Array.from({ length: jobs }, () => testJob(auditQueue, { schedule, group })) },
    md,
  );
  return results.map((r) => (r.outcome?.$case === 'accepted' ? r.outcome.value.jobId : ''));
}

/** Makes `jobs` dead letters on the audited queue. */
async function deadLetters(
  c: QueueServiceClient,
  md: Metadata,
  auditQueue: string,
  jobs: number,
): Promise<void> {
  await enqueueTo(c, md, auditQueue, jobs);
  const { jobs: leased } = await call(
    c,
    c.reserve,
    {
      maxResponseBytes: 0,
      queues: [auditQueue],
      maxJobs: jobs,
      leaseDurationMs: 0,
      waitTimeoutMs: 0,
      workerId: '',
    },
    md,
  );
  for (const j of leased) {
    await call(
      c,
      c.nack,
      {
        jobId: j.jobId,
        attempt: j.attempt,
        errorMessage: 'x',
        errorClass: '',
        errorStack: '',
        directive: { $case: 'deadLetter', value: true },
      },
      md,
    );
  }
}

const auditRows: Readonly<Record<string, AuditRow>> = {
  CancelBatch: {
    async run(c, md, auditQueue) {
      const jobs = [testJob(auditQueue), testJob(auditQueue)];
      const { batch } = await call(c, c.createBatch, { jobs, seal: true, sealIfAllStored: false }, md);
      await call(c, c.cancelBatch, { batchId: batch!.id }, md);
      return { target: `batch:${batch!.id}` };
    },
    action: 'batch.cancel',
    details: { members: 2, cancelled: 2, cancelRequested: 0 },
  },
  CancelFlow: {
    async run(c, md, auditQueue) {
      const jobs = [
        { name: 'a', job: testJob(auditQueue), after: [] },
        { name: 'b', job: testJob(auditQueue), after: ['a'] },
      ];
      const { jobs: stored } = await call(c, c.enqueueFlow, { jobs }, md);
      await call(c, c.cancelFlow, { jobId: stored[0]!.jobId }, md);
      return { target: `job:${stored[0]!.jobId}` };
    },
    action: 'flow.cancel',
    details: { jobs: 2, cancelled: 2, cancelRequested: 0 },
  },
  CancelJob: {
    async run(c, md, auditQueue) {
      const [jobId] = await enqueueTo(c, md, auditQueue, 1);
      await call(c, c.cancelJob, { jobId: jobId! }, md);
      return { target: `job:${jobId}` };
    },
    action: 'job.cancel',
    details: { previousState: 'ready', state: 'cancelled' },
  },
  CancelJobs: {
    async run(c, md, auditQueue) {
      await enqueueTo(c, md, auditQueue, 3, 0, 'g1');
      await enqueueTo(c, md, auditQueue, 1, 0, 'other');
      const filter = { queue: auditQueue, type: '', states: [], group: 'g1', ...unsetFilterFields };
      await call(c, c.cancelJobs, { requestKey: '', filter, dryRun: false, background: false }, md);
      return { target: `queue:${auditQueue}` };
    },
    action: 'jobs.cancel',
    details: { group: 'g1', changed: 3, cancelRequested: 0 },
  },
  UpdateJob: {
    async run(c, md, auditQueue) {
      const [jobId] = await enqueueTo(c, md, auditQueue, 1);
      const changes = { priorityChange: priority(5), groupChange: { $case: 'group' as const, value: 'g2' } };
      await call(c, c.updateJob, { jobId: jobId!, changes }, md);
      return { target: `job:${jobId}` };
    },
    action: 'job.update',
    details: { priority: 5, group: 'g2', previousGroup: null, previousState: 'ready', state: 'ready' },
  },
  UpdateJobs: {
    async run(c, md, auditQueue) {
      await enqueueTo(c, md, auditQueue, 2, 60_000, 'g1');
      const changes = { scheduleChange: { $case: 'runNow' as const, value: true } };
      await enqueueTo(c, md, auditQueue, 1, 60_000, 'other');
      const filter = { queue: auditQueue, type: '', states: [], group: 'g1', ...unsetFilterFields };
      await call(c, c.updateJobs, { requestKey: '', filter, changes, dryRun: false, background: false }, md);
      return { target: `queue:${auditQueue}` };
    },
    action: 'jobs.update',
    details: { group: 'g1', runNow: true, changed: 2 },
  },
  PauseQueue: {
    async run(c, md, auditQueue) {
      await call(c, c.pauseQueue, { queue: auditQueue, allowMissing: true }, md);
      return { target: `queue:${auditQueue}` };
    },
    action: 'queue.pause',
    details: { wasPaused: false },
  },
  ResumeQueue: {
    async run(c, md, auditQueue) {
      await call(c, c.pauseQueue, { queue: auditQueue, allowMissing: true }, md);
      await call(c, c.resumeQueue, { queue: auditQueue, allowMissing: false }, md);
      return { target: `queue:${auditQueue}` };
    },
    action: 'queue.resume',
    details: { wasPaused: true },
  },
  DeleteQueue: {
    async run(c, md, auditQueue) {
      // A queue that exists and holds no job: created by a pause.
      await call(c, c.pauseQueue, { queue: auditQueue, allowMissing: true }, md);
      await call(c, c.deleteQueue, { queue: auditQueue }, md);
      return { target: `queue:${auditQueue}` };
    },
    action: 'queue.delete',
    details: { deleted: true },
  },
  PurgeQueue: {
    async run(c, md, auditQueue) {
      await enqueueTo(c, md, auditQueue, 4);
      await call(c, c.purgeQueue, { requestKey: '', queue: auditQueue, background: false }, md);
      return { target: `queue:${auditQueue}` };
    },
    action: 'queue.purge',
    details: { changed: 4 },
  },
  RequeueJobs: {
    async run(c, md, auditQueue) {
      await deadLetters(c, md, auditQueue, 2);
      const filter = {
        ...unsetFilterFields,
        queue: auditQueue,
        type: '',
        states: [],
        group: '',
        errorText: 'X',
      };
      await call(c, c.requeueJobs, { requestKey: '', filter, dryRun: false, background: false }, md);
      return { target: `queue:${auditQueue}` };
    },
    action: 'jobs.requeue',
    details: { errorText: 'X', changed: 2, done: true },
  },
  DeleteJobs: {
    async run(c, md, auditQueue) {
      await enqueueTo(c, md, auditQueue, 3);
      const filter = { ...unsetFilterFields, queue: auditQueue, type: '', states: [], group: '' };
      await call(c, c.deleteJobs, { requestKey: '', filter, dryRun: false, background: false }, md);
      return { target: `queue:${auditQueue}` };
    },
    action: 'jobs.delete',
    details: { changed: 3, matched: 3 },
  },
  RequeueDeadLetters: {
    async run(c, md, auditQueue) {
      await deadLetters(c, md, auditQueue, 2);
      await call(
        c,
        c.requeueDeadLetters,
        {
          requestKey: '',
          queue: auditQueue,
          jobIds: [],
          all: true,
          reason: 0,
          errorText: '',
          background: false,
        },
        md,
      );
      return { target: `queue:${auditQueue}` };
    },
    action: 'dead_letters.requeue_all',
    details: { changed: 2 },
  },
  DeleteDeadLetters: {
    async run(c, md, auditQueue) {
      await deadLetters(c, md, auditQueue, 3);
      await call(
        c,
        c.deleteDeadLetters,
        {
          requestKey: '',
          queue: auditQueue,
          jobIds: [],
          all: true,
          reason: 0,
          errorText: '',
          background: false,
        },
        md,
      );
      return { target: `queue:${auditQueue}` };
    },
    action: 'dead_letters.delete_all',
    details: { changed: 3 },
  },
  SetQueueSettings: {
    async run(c, md, auditQueue) {
      await enqueueTo(c, md, auditQueue, 1);
      await call(c, c.setQueueSettings, { queue: auditQueue, settings: { max_attempts: '7' } }, md);
      return { target: `queue:${auditQueue}` };
    },
    action: 'queue.settings.set',
    details: { settings: { max_attempts: '7' } },
  },
  ResetQueueSettings: {
    async run(c, md, auditQueue) {
      await enqueueTo(c, md, auditQueue, 1);
      await call(c, c.setQueueSettings, { queue: auditQueue, settings: { max_attempts: '7' } }, md);
      await call(c, c.resetQueueSettings, { queue: auditQueue, keys: ['max_attempts'], all: false }, md);
      return { target: `queue:${auditQueue}` };
    },
    action: 'queue.settings.reset',
    details: { keys: ['max_attempts'] },
  },
  ReloadConfig: {
    async run(c, md) {
      // A dry run and a refused reload are audited too, each as its own entry
      // with its result (tests/rpc/reload-security.test.ts).
      const { configFile } = await call(
        c,
        c.reloadConfig,
        { dryRun: false, allowSecurityDowngrade: false },
        md,
      );
      return { target: `config:${configFile}` };
    },
    action: 'config.reload',
    details: { changed: [], result: 'applied' },
  },
  // On PostgreSQL (which makes no backups: FAILED_PRECONDITION, tests/rpc/backup.test.ts) a
  // refused Backup writes nothing; see 'a refused call writes nothing'.
  Backup: {
    async run(c, md) {
      const stream = c.backup({}, md) as grpc.ClientReadableStream<BackupChunk>;
      await new Promise<void>((resolve, reject) => {
        stream.on('data', () => {});
        stream.on('end', resolve);
        stream.on('error', reject);
      });
      return { target: 'server' };
    },
    action: 'server.backup',
    details: {},
  },
  CreateSchedule: {
    async run(c, md, name) {
      await createSchedule(c, md, name);
      return { target: `schedule:${name}` };
    },
    action: 'schedule.create',
    details: { cron: '0 * * * *', queue: 'audit-CreateSchedule', source: 'api' },
  },
  UpdateSchedule: {
    async run(c, md, name) {
      await createSchedule(c, md, name);
      await call(c, c.updateSchedule, { schedule: spec(name, 'u'), allowMissing: false }, md);
      return { target: `schedule:${name}` };
    },
    action: 'schedule.update',
    details: { created: false, type: 'u' },
  },
  PauseSchedule: {
    async run(c, md, name) {
      await createSchedule(c, md, name);
      await call(c, c.pauseSchedule, { name }, md);
      return { target: `schedule:${name}` };
    },
    action: 'schedule.pause',
    details: { wasPaused: false },
  },
  ResumeSchedule: {
    async run(c, md, name) {
      await createSchedule(c, md, name);
      await call(c, c.pauseSchedule, { name }, md);
      await call(c, c.resumeSchedule, { name }, md);
      return { target: `schedule:${name}` };
    },
    action: 'schedule.resume',
    details: { wasPaused: true },
  },
  DeleteSchedule: {
    async run(c, md, name) {
      await createSchedule(c, md, name);
      await call(c, c.deleteSchedule, { name }, md);
      return { target: `schedule:${name}` };
    },
    action: 'schedule.delete',
    details: { ticksEnqueued: 0 },
  },
  TriggerSchedule: {
    async run(c, md, name) {
      await createSchedule(c, md, name);
      await call(c, c.triggerSchedule, { name }, md);
      return { target: `schedule:${name}` };
    },
    action: 'schedule.trigger',
    details: { deduplicated: false },
  },
};

describe('every admin RPC is audited (gRPC)', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ toml: keysToml });
  });
  after(() => t.dispose());

  const admin = () => metadataFor({ name: 'admin', headers: [`Bearer ${keys.admin}`], role: 'admin' });

  test('the table has a row for every admin RPC that changes something', () => {
    const adminOnly = Object.entries(expected)
      .filter(([, roles]) => roles.length === 1 && roles[0] === 'admin')
      .map(([rpc]) => rpc)
      // Reads; and a stop is recorded in the entry of the operation it stops (bulk-operations.test.ts).
      .filter(
        (rpc) =>
          !['ListAuditEntries', 'GetBulkOperation', 'ListBulkOperations', 'CancelBulkOperation'].includes(
            rpc,
          ),
      );
    assert.deepEqual(Object.keys(auditRows).sort(), adminOnly.sort());
  });

  for (const [rpc, row] of Object.entries(auditRows)) {
    test(`${rpc}: one entry with the key, ${row.action}, the target and the count`, async () => {
      const c = t.client;
      const list = () =>
        call(
          c,
          c.listAuditEntries,
          { actor: '', action: row.action, target: '', pageSize: 10, pageToken: '' },
          admin(),
        );
      const newestBefore = (await list()).entries[0]?.id ?? 0;
      // The PostgreSQL store keeps no backups: refused, nothing written.
      if (rpc === 'Backup' && testStoreKind === 'postgres') {
        await assert.rejects(row.run(c, admin(), `audit-${rpc}`), { code: status.FAILED_PRECONDITION });
        assert.deepEqual(
          (await list()).entries.filter((e) => e.id > newestBefore),
          [],
          'a refused backup',
        );
        return;
      }
      const { target } = await row.run(c, admin(), `audit-${rpc}`);
      const entries = (await list()).entries.filter((e) => e.id > newestBefore);
      assert.equal(entries.length, 1, `${rpc} wrote one ${row.action} entry`);
      const entry = entries[0]!;
      assert.equal(entry.actor, 'key:ops');
      assert.equal(entry.target, target);
      const details = JSON.parse(entry.detailsJson) as Record<string, unknown>;
      assert.equal(details.via, 'grpc');
      for (const [key, value] of Object.entries(row.details))
        assert.deepEqual(details[key], value, `${rpc} ${key}`);
    });
  }

  test('a refused call writes nothing; another key is named as itself', async () => {
    const c = t.client;
    const count = async () =>
      (
        await call(
          c,
          c.listAuditEntries,
          { actor: '', action: '', target: '', pageSize: 1000, pageToken: '' },
          admin(),
        )
      ).entries.length;
    const before = await count();
    const producer = metadataFor({
      name: 'producer',
      headers: [`Bearer ${keys.producer}`],
      role: 'producer',
    });
    await assert.rejects(
      call(c, c.purgeQueue, { requestKey: '', queue: 'audit-refused', background: false }, producer),
      {
        code: status.PERMISSION_DENIED,
      },
    );
    await assert.rejects(call(c, c.cancelJob, { jobId: missingJobId }, admin()), { code: status.NOT_FOUND });
    assert.equal(await count(), before);
    const hashed = metadataFor({ name: 'hashed', headers: [`Bearer ${keys.hashedAdmin}`], role: 'admin' });
    await call(c, c.pauseQueue, { queue: 'audit-hashed', allowMissing: true }, hashed);
    const { entries } = await call(
      c,
      c.listAuditEntries,
      { actor: 'key:ops-hashed', action: '', target: '', pageSize: 1, pageToken: '' },
      admin(),
    );
    assert.equal(entries[0]?.action, 'queue.pause');
  });
});
