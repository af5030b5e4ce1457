// Smoke tests of the generated protocol code: messages survive the wire, the
// service has exactly the published RPCs, and the protocol's vocabulary (states,
// reasons, limits, settings) matches the engine's one to one; the SDK reads a
// field an older server does not send as 0.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { serverInfoFromProto } from '../../clients/typescript/src/convert.ts';
import { GetServerInfoResponse, ServerLimits } from '../../clients/typescript/src/gen/sepp/v1/admin.ts';
import { DeadReason, JobState, RejectionReason } from '../../clients/typescript/src/gen/sepp/v1/job.ts';
import { EnqueueRequest, ProduceResponse } from '../../clients/typescript/src/gen/sepp/v1/produce.ts';
import { BackoffSettings, QueueSettings } from '../../clients/typescript/src/gen/sepp/v1/queue.ts';
import { QueueServiceService } from '../../clients/typescript/src/gen/sepp/v1/queue_service.ts';
import { MisfirePolicy, OverlapPolicy } from '../../clients/typescript/src/gen/sepp/v1/schedule.ts';
import { WorkRequest, WorkResponse } from '../../clients/typescript/src/gen/sepp/v1/work.ts';
import { SeppClient } from '../../clients/typescript/src/index.ts';
import { rejectionCode } from '../../src/engine/errors.ts';
import { misfirePolicies, overlapPolicies } from '../../src/engine/schedules/types.ts';
import { defaultEngineLimits, defaultQueueSettings } from '../../src/engine/settings.ts';
import { deadReasons, jobStates } from '../../src/engine/types.ts';

/** Names of a generated numeric enum's members, lower-cased, without the zero and unrecognised values. */
function memberNames(enumObject: Record<string, string | number>): string[] {
  return Object.keys(enumObject)
    .filter((key) => Number.isNaN(Number(key)) && key !== 'UNSPECIFIED' && key !== 'UNRECOGNIZED')
    .map((key) => key.toLowerCase())
    .sort();
}

test('an EnqueueRequest with payload, metadata and schedule survives encode and decode', () => {
  const request: EnqueueRequest = {
    job: {
      queue: 'emails',
      type: 'welcome',
      payload: Buffer.from('{"to":"ada@example.com"}'),
      contentType: 'application/json',
      priority: 9,
      schedule: { $case: 'runAtMs', value: 1_767_225_600_000 },
      maxAttempts: 3,
      idempotencyKey: 'signup-42',
      metadata: { tenant: 'acme', source: 'signup' },
      traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      tracestate: '',
      expiry: { $case: 'ttlMs', value: 60_000 },
      uniqueWhileActive: true,
      group: 'tenant-42',
      dependsOn: ['0190b2a0-0000-7000-8000-000000000001', '0190b2a0-0000-7000-8000-000000000002'],
      onDependencyFailure: 2,
      timeoutMs: 5000,
      debounceKey: 'doc-7',
      debounceMs: 1000,
      debounceMaxMs: 60_000,
    },
  };
  const decoded = EnqueueRequest.decode(EnqueueRequest.encode(request).finish());
  assert.deepEqual(decoded, request);

  const delayed = EnqueueRequest.fromPartial({
    job: { queue: 'q', type: 't', schedule: { $case: 'delayMs', value: 5000 } },
  });
  assert.deepEqual(EnqueueRequest.decode(EnqueueRequest.encode(delayed).finish()).job?.schedule, {
    $case: 'delayMs',
    value: 5000,
  });
});

test('stream messages carry their oneofs and correlation ids across the wire', () => {
  const nack: WorkRequest = WorkRequest.fromPartial({
    requestId: 7,
    kind: {
      $case: 'nack',
      value: {
        jobId: 'j1',
        attempt: 2,
        errorMessage: 'smtp timeout',
        directive: { $case: 'retryDelayMs', value: 250 },
      },
    },
  });
  assert.deepEqual(WorkRequest.decode(WorkRequest.encode(nack).finish()), nack);

  const settled = WorkResponse.fromPartial({
    kind: {
      $case: 'settled',
      value: {
        requestId: 7,
        code: 0,
        result: { $case: 'nack', value: { state: JobState.SCHEDULED, runAtMs: 1250 } },
      },
    },
  });
  assert.deepEqual(WorkResponse.decode(WorkResponse.encode(settled).finish()), settled);

  const failed = ProduceResponse.fromPartial({ sequence: 2 ** 40, code: 8, message: 'too many jobs' });
  assert.deepEqual(ProduceResponse.decode(ProduceResponse.encode(failed).finish()), failed);
});

test('QueueService has exactly the published RPCs: Produce and Work bidirectional, Backup and Events stream their answers', () => {
  const published = [
    'Enqueue',
    'EnqueueBatch',
    'EnqueueAtomic',
    'EnqueueFlow',
    'Reserve',
    'Ack',
    'AckBatch',
    'Nack',
    'Extend',
    'ReportProgress',
    'GetJob',
    'CancelJob',
    'ListQueues',
    'PauseQueue',
    'ResumeQueue',
    'DeleteQueue',
    'ListDeadLetters',
    'ListTopErrors',
    'RequeueDeadLetters',
    'DeleteDeadLetters',
    'GetServerInfo',
    'SetQueueSettings',
    'ResetQueueSettings',
    'ReloadConfig',
    'ListWorkers',
    'Backup',
    'Produce',
    'Work',
    'Events',
    'CreateSchedule',
    'UpdateSchedule',
    'GetSchedule',
    'ListSchedules',
    'PauseSchedule',
    'ResumeSchedule',
    'DeleteSchedule',
    'TriggerSchedule',
    // Job control (issue 17).
    'CancelJobs',
    'UpdateJob',
    'UpdateJobs',
    'PurgeQueue',
    'ListAuditEntries',
    // Bulk operations (issues 29, 36).
    'RequeueJobs',
    'DeleteJobs',
    'GetBulkOperation',
    'ListBulkOperations',
    'CancelBulkOperation',
    // Batches (issue 33).
    'CreateBatch',
    'AddToBatch',
    'SealBatch',
    'GetBatch',
    'ListBatches',
    'CancelBatch',
    'GetFlow',
    'CancelFlow',
  ];
  const methods = Object.values(QueueServiceService);
  assert.deepEqual(
    methods.map((m) => m.path).sort(),
    published.map((name) => `/sepp.v1.QueueService/${name}`).sort(),
  );
  const streaming = methods.filter((m) => m.requestStream || m.responseStream);
  assert.deepEqual(streaming.map((m) => [m.path, m.requestStream, m.responseStream]).sort(), [
    ['/sepp.v1.QueueService/Backup', false, true],
    ['/sepp.v1.QueueService/Events', false, true],
    ['/sepp.v1.QueueService/Produce', true, true],
    ['/sepp.v1.QueueService/Work', true, true],
  ]);
});

test("the protocol's enums match the engine's states and rejection reasons one to one", () => {
  assert.deepEqual(memberNames(JobState), [...jobStates].sort());
  assert.deepEqual(memberNames(RejectionReason), Object.keys(rejectionCode).sort());
  assert.deepEqual(memberNames(DeadReason), [...deadReasons].sort());
  assert.deepEqual(memberNames(MisfirePolicy), [...misfirePolicies].sort());
  assert.deepEqual(memberNames(OverlapPolicy), [...overlapPolicies].sort());
});

test('ServerLimits and QueueSettings report every engine limit and queue setting', () => {
  // The gRPC port's own limits (grpc.* settings), besides the engine's.
  const extraLimits = [
    'maxMessageBytes',
    'maxConnections',
    'maxStreamsPerConnection',
    'handshakeTimeoutMs',
    'idleTimeoutMs',
    'keepaliveMs',
    'keepaliveTimeoutMs',
    'firstMessageTimeoutMs',
    'maxEventSubscribersPerKey',
    'maxBytesInFlightPerConnection',
    'maxBytesInFlightPerKey',
  ];
  assert.deepEqual(
    Object.keys(ServerLimits.create()).sort(),
    [...Object.keys(defaultEngineLimits), ...extraLimits].sort(),
  );
  assert.deepEqual(Object.keys(QueueSettings.create()).sort(), Object.keys(defaultQueueSettings).sort());
  assert.deepEqual(
    Object.keys(BackoffSettings.create()).sort(),
    Object.keys(defaultQueueSettings.backoff).sort(),
  );
});

test('a server that predates the keepalive fields: the SDK reads 0, which is no keepaliveMs to connect with', () => {
  // Such a server's limits carry the fields it knew (here the idle timeout) and lack fields 20 and 21.
  const older = new Uint8Array(
    GetServerInfoResponse.encode({
      ...GetServerInfoResponse.create(),
      limits: ServerLimits.fromPartial({ idleTimeoutMs: 300_000 }),
    }).finish(),
  );
  const { limits } = serverInfoFromProto(GetServerInfoResponse.decode(older));
  assert.deepEqual([limits.idleTimeoutMs, limits.keepaliveMs, limits.keepaliveTimeoutMs], [300_000, 0, 0]);
  assert.throws(
    () => SeppClient.connect('127.0.0.1:1', { keepaliveMs: limits.keepaliveMs }),
    (e) => e instanceof TypeError && /keepaliveMs must be a positive integer/.test(e.message),
  );
});
