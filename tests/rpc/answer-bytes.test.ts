/**
 * List answers are bounded in bytes as well as in entries (issue 29, item 2):
 * a page of large entries holds those that fit gRPC's default 4 MiB and its
 * token continues after the last one sent, so following the tokens gives
 * every entry once; GetJob of a job too large to send as one answer fails
 * with a RESOURCE_EXHAUSTED that says so, not with the transport's error.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type ServiceError, status } from '@grpc/grpc-js';
import { DeadReason } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import { call, startTestServer, type TestServer } from '../helpers/server.ts';

const KiB = 1024;
const MiB = 1024 * KiB;
const fourMiB = 4 * MiB;

let t: TestServer;
before(async () => {
  t = await startTestServer({
    toml: `
[grpc]
max_message_bytes = "4MiB"
[limits]
max_metadata_bytes = "1MiB"
max_error_bytes = "1MiB"
max_result_bytes = "2MiB"
[queues.large]
max_payload_bytes = "2MiB"
`,
  });
});
after(async () => {
  await t.dispose();
});

/** Enqueues `n` jobs with `metadataBytes` of metadata each, then dead-letters them with `errorBytes` of error. */
async function deadLetters(
  queue: string,
  n: number,
  metadataBytes: number,
  errorBytes: number,
): Promise<string[]> {
  const engine = t.server.engine;
  const enqueued = await engine.enqueueBatch(
    Array.from({ length: n }, () => ({
      queue,
      type: 't',
      payload: new Uint8Array(),
      metadata: { big: 'm'.repeat(metadataBytes) },
    })),
  );
  const ids = enqueued.map((r) => (r.ok ? r.jobId : assert.fail('enqueue refused')));
  const leased = await engine.reserve({
    queues: [queue],
    maxJobs: n,
    leaseMs: 60_000,
    waitMs: 0,
    workerId: 'w',
  });
  assert.equal(leased.length, n);
  for (const job of leased) {
    await engine.nack({
      jobId: job.id,
      attempt: job.attempt,
      error: 'e'.repeat(errorBytes),
      directive: { kind: 'dead_letter' },
    });
  }
  return ids;
}

test('ListDeadLetters: a page of 24 dead letters of ~700 KB each is cut at 4 MiB; the tokens give all of them once', async () => {
  const c = t.client;
  const ids = await deadLetters('dl-big', 24, 400 * KiB, 300 * KiB);
  const seen: string[] = [];
  let token = '';
  let pages = 0;
  do {
    const page = await call(c, c.listDeadLetters, {
      queue: 'dl-big',
      pageSize: 100,
      pageToken: token,
      reason: DeadReason.UNSPECIFIED,
    });
    pages++;
    assert.ok(page.jobs.length >= 1, 'every page moves on');
    const bytes = page.jobs.reduce(
      (sum, j) => sum + Buffer.byteLength(JSON.stringify(j.metadata)) + j.lastError.length,
      0,
    );
    assert.ok(bytes <= fourMiB, `page ${pages}: ${bytes} bytes of entries`);
    seen.push(...page.jobs.map((j) => j.jobId));
    token = page.nextPageToken;
  } while (token !== '' && pages < 50);
  assert.ok(pages >= 5, `24 × ~700 KB takes at least 5 pages of 4 MiB (${pages})`);
  assert.deepEqual([...seen].sort(), [...ids].sort(), 'every dead letter once');
});

test('ListAuditEntries: 600 entries of ~9 KB (details are kept to 8 KiB) are cut at 4 MiB; the tokens give all once', async () => {
  const engine = t.server.engine;
  const c = t.client;
  const entries = 600;
  await engine.enqueueBatch([{ queue: 'audited', type: 't', payload: new Uint8Array() }]);
  for (let i = 0; i < entries; i++) {
    await engine.pauseQueue('audited', {
      actor: 'tester',
      action: 'queue.pause',
      target: `queue:audited-${i}`,
      details: { note: 'n'.repeat(8000) },
    });
  }
  const targets: string[] = [];
  let token = '';
  let pages = 0;
  do {
    const page = await call(c, c.listAuditEntries, {
      actor: 'tester',
      action: '',
      target: '',
      pageSize: 1000,
      pageToken: token,
    });
    pages++;
    const bytes = page.entries.reduce((sum, e) => sum + e.detailsJson.length, 0);
    assert.ok(bytes <= fourMiB, `page ${pages}: ${bytes} bytes of details`);
    targets.push(...page.entries.map((e) => e.target));
    token = page.nextPageToken;
  } while (token !== '' && pages < 50);
  assert.ok(pages >= 2, `600 × ~9 KB takes at least 2 pages (${pages})`);
  assert.deepEqual(
    [...targets].sort(),
    Array.from({ length: entries }, (_, i) => `queue:audited-${i}`).sort(),
  );
});

test('GetJob of a job whose payload, result and errors exceed max_message_bytes: RESOURCE_EXHAUSTED saying so', async () => {
  const engine = t.server.engine;
  const c = t.client;
  const [enqueued] = await engine.enqueueBatch([
    { queue: 'large', type: 't', payload: new Uint8Array(2 * MiB).fill(1), maxAttempts: 5 },
  ]);
  const jobId = enqueued?.ok ? enqueued.jobId : assert.fail('enqueue refused');
  // Two failed attempts: 2 MiB of payload, and 900 KB of error twice in the history and once as the last.
  for (let i = 0; i < 2; i++) {
    const [leased] = await engine.reserve({
      queues: ['large'],
      maxJobs: 1,
      leaseMs: 60_000,
      waitMs: 0,
      workerId: 'w',
    });
    assert.equal(leased?.id, jobId);
    await engine.nack({
      jobId,
      attempt: leased.attempt,
      error: 'e'.repeat(900 * KiB),
      directive: { kind: 'delay', delayMs: 0 },
    });
  }
  let error: ServiceError | undefined;
  try {
    await call(c, c.getJob, { jobId });
  } catch (e) {
    error = e as ServiceError;
  }
  assert.equal(error?.code, status.RESOURCE_EXHAUSTED, `${error?.code} ${error?.details}`);
  assert.match(error.details, /payload 2097152/);
  assert.match(error.details, /grpc\.max_message_bytes \(4194304\)/);
  // A job that fits is answered whole.
  const [small] = await engine.enqueueBatch([{ queue: 'large', type: 't', payload: new Uint8Array(MiB) }]);
  const answer = await call(c, c.getJob, { jobId: small?.ok ? small.jobId : '' });
  assert.equal(answer.job?.payload.length, MiB);
});

test('ListSchedules: paged by name; schedules with 900 KB of metadata are cut at 4 MiB; the tokens give all once', async () => {
  const engine = t.server.engine;
  const c = t.client;
  const names = Array.from({ length: 7 }, (_, i) => `sched-${i}`);
  for (const name of names) {
    await engine.putSchedule(
      {
        name,
        intervalMs: 3_600_000,
        template: {
          queue: 'ticks',
          type: 't',
          payload: new Uint8Array(),
          metadata: { big: 'm'.repeat(900 * KiB) },
        },
      },
      'create',
    );
  }
  const listed: string[] = [];
  let token = '';
  let pages = 0;
  do {
    const page = await call(c, c.listSchedules, { nextRuns: 0, pageSize: 100, pageToken: token });
    pages++;
    listed.push(...page.schedules.map((s) => s.spec?.name ?? ''));
    token = page.nextPageToken;
  } while (token !== '' && pages < 20);
  assert.ok(pages >= 2, `7 × 900 KB takes at least 2 pages (${pages})`);
  assert.deepEqual(listed, names, 'in name order, each once');
  // A page size names how many; a bad token or size is INVALID_ARGUMENT.
  const two = await call(c, c.listSchedules, { nextRuns: 0, pageSize: 2, pageToken: '' });
  assert.deepEqual(
    two.schedules.map((s) => s.spec?.name),
    ['sched-0', 'sched-1'],
  );
  for (const bad of [
    { pageSize: 100_000, pageToken: '' },
    { pageSize: 0, pageToken: 'not-a-token' },
  ]) {
    const error = await call(c, c.listSchedules, { nextRuns: 0, ...bad }).then(
      () => assert.fail('accepted'),
      (e: ServiceError) => e,
    );
    assert.equal(error.code, status.INVALID_ARGUMENT, error.details);
  }
});

test('ListWorkers: paged; 60 workers with 1,000 long queue names each are cut at 4 MiB; the tokens give all once', async () => {
  const engine = t.server.engine;
  const c = t.client;
  const queues = Array.from({ length: 1000 }, (_, i) => `q-${i}-${'x'.repeat(90)}`);
  const ids = Array.from({ length: 60 }, (_, i) => `worker-${String(i).padStart(2, '0')}`);
  for (const workerId of ids) engine.workers.touch({ workerId, address: 'ipv4:10.0.0.1:5000', queues });
  const listed: string[] = [];
  let token = '';
  let pages = 0;
  do {
    const page = await call(c, c.listWorkers, { pageSize: 1000, pageToken: token });
    pages++;
    listed.push(...page.workers.map((w) => w.workerId));
    token = page.nextPageToken;
  } while (token !== '' && pages < 20);
  assert.ok(pages >= 2, `60 × ~100 KB takes at least 2 pages (${pages})`);
  assert.deepEqual(
    listed.filter((id) => id.startsWith('worker-')),
    ids,
    'in worker id order, each once',
  );
  const three = await call(c, c.listWorkers, { pageSize: 3, pageToken: '' });
  assert.equal(three.workers.length, 3);
  assert.notEqual(three.nextPageToken, '');
});
