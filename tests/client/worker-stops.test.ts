/**
 * When a Worker stops and when it retries (docs/protocol.md, "What stops a Worker"):
 * a Work stream or Reserve refused with a status in `fatalStatuses`, or marked
 * `sepp-retry: never`, stops the worker (said once, `wait()` rejects with it); every other
 * status, `sepp-retry: operator` included, is reported and retried with backoff. Each status a real server answers is shown on one, over both
 * transports; the rest (and a stream the server ends with OK) on a stand-in server
 * that answers whatever status it is asked for. (A settlements batch the server refuses after
 * a reload lowered `limits.max_batch_jobs` is cut again and sent once instead:
 * worker-recut.test.ts.) The Python SDK's tests of the same table are in
 * clients/python/tests/test_worker_stops.py.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { status } from '@grpc/grpc-js';
import { QueueServiceService } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import type {
  ReserveRequest,
  ReserveResponse,
  WorkRequest,
  WorkResponse,
} from '../../clients/typescript/src/gen/sepp/v1/work.js';
import {
  SeppClient,
  SeppError,
  type Worker,
  type WorkerLogger,
  type WorkerOptions,
} from '../../clients/typescript/src/index.ts';
import { fatalStatuses } from '../../clients/typescript/src/work-transport.ts';
import { registerSecret } from '../helpers/secret-log.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { listenOnLoopback } from '../helpers/stand-in-server.ts';
import { deferred, until } from './helpers.ts';

const transports = ['stream', 'unary'] as const;
const adminKey = 'stops-admin-key-0123456789';
const producerKey = 'stops-producer-key-0123456789';
const scopedKey = 'stops-scoped-key-0123456789';

/** A logger that keeps every line, by level. */
function recordingLogger(): WorkerLogger & { lines: { level: string; message: string }[] } {
  const lines: { level: string; message: string }[] = [];
  const at = (level: string) => (message: string) => void lines.push({ level, message });
  return { lines, info: at('info'), warn: at('warn'), error: at('error') };
}

interface Watched {
  worker: Worker;
  /** Its `error` events. */
  errors: SeppError[];
  /** Resolves at its second `error` event: it asked again. */
  retried: Promise<void>;
  logger: ReturnType<typeof recordingLogger>;
}

/** A worker with fast reconnects whose every `error` event is kept. */
function watchedWorker(
  client: SeppClient,
  options: Omit<WorkerOptions, 'fallback' | 'reconnect' | 'logger'>,
  fallback: NonNullable<WorkerOptions['fallback']> = () => undefined,
): Watched {
  const logger = recordingLogger();
  const worker = client.worker({
    ...options,
    reconnect: { baseDelayMs: 1, maxDelayMs: 20 },
    logger,
    fallback,
  });
  const errors: SeppError[] = [];
  const retried = deferred();
  worker.on('error', (error) => {
    if (errors.push(error) === 2) retried.resolve();
  });
  return { worker, errors, retried: retried.promise, logger };
}

/** The worker stops with `grpcCode`, says so once, and is closed. */
async function assertStops(made: Watched, grpcCode: number, message: RegExp, what: string): Promise<void> {
  const { worker, errors, logger } = made;
  const ended = await Promise.race([
    worker.wait().then(
      () => 'closed without an error',
      (error: unknown) => error,
    ),
    made.retried.then(() => 'asked again'),
  ]);
  if (ended === 'asked again') await worker.close({ timeoutMs: 0 });
  assert.ok(ended instanceof SeppError, `${what}: ${String(ended)}`);
  assert.equal(ended.grpcCode, grpcCode, `${what}: ${ended.message}`);
  assert.match(ended.message, message, what);
  assert.equal(worker.state, 'closed', what);
  assert.equal(errors.length, 1, `${what}: one error event`);
  const stopped = logger.lines.filter((l) => l.level === 'error');
  assert.equal(stopped.length, 1, `${what}: ${JSON.stringify(logger.lines)}`);
  assert.match(stopped[0]?.message ?? '', / stopped: /, what);
}

describe('Worker: what a real server refuses', () => {
  let t: TestServer;
  let admin: SeppClient;
  const keys = [
    { name: 'admin', role: 'admin', key: adminKey, queues: '' },
    { name: 'producer', role: 'producer', key: producerKey, queues: '' },
    { name: 'scoped', role: 'worker', key: scopedKey, queues: 'queues = ["stops-mine"]\n' },
  ];
  before(async () => {
    for (const { name, key } of keys) registerSecret(`${name} key`, key);
    // Two long polls at once: a worker of two streams fills them (RESOURCE_EXHAUSTED for a third).
    const apiKeys = keys
      .map((k) => `[[grpc.api_keys]]\nname = "${k.name}"\nrole = "${k.role}"\nkey = "${k.key}"\n${k.queues}`)
      .join('');
    const toml = `${apiKeys}[limits]\nmax_reserve_jobs = 4\nmax_waiters = 2\n`;
    t = await startTestServer({ toml });
    admin = SeppClient.connect(t.address, { apiKey: adminKey });
  });
  after(async () => {
    await admin.close();
    await t.dispose();
  });

  /** Makes `queue` exist with nothing ready in it, so ListQueues counts the long polls waiting on it. */
  async function quietQueue(queue: string): Promise<void> {
    await admin.enqueue(queue, 'later', undefined, { delayMs: 3_600_000 });
  }

  /** Waits until `count` long polls (Reserve calls, Work streams) wait on `queue`. */
  async function untilWaiting(queue: string, count: number): Promise<void> {
    const waiting = async () => (await admin.listQueues()).find((q) => q.name === queue)?.waitingWorkers;
    await until(async () => (await waiting()) === count, `${count} long polls on ${queue}`);
  }

  for (const transport of transports) {
    test(`${transport}: refusals asking again cannot change stop the worker, said once`, async () => {
      const clients = {
        wrong: SeppClient.connect(t.address, { apiKey: 'not-a-key-0123456789' }),
        producer: SeppClient.connect(t.address, { apiKey: producerKey }),
        scoped: SeppClient.connect(t.address, { apiKey: scopedKey }),
      };
      try {
        const cases = [
          {
            what: 'a key the server does not know',
            client: clients.wrong,
            options: { queues: ['q'] },
            grpcCode: status.UNAUTHENTICATED,
            message: /refused the API key/,
          },
          {
            what: 'a key whose role may not take jobs',
            client: clients.producer,
            options: { queues: ['q'] },
            grpcCode: status.PERMISSION_DENIED,
            message: /role producer, which may not call (Work|Reserve)/,
          },
          {
            what: 'a queue outside the key’s queues',
            client: clients.scoped,
            options: { queues: ['stops-mine', 'elsewhere'] },
            grpcCode: status.PERMISSION_DENIED,
            message: /may use only the queues stops-mine/,
          },
          {
            what: 'a queue name the server refuses',
            client: admin,
            options: { queues: ['no spaces allowed'] },
            grpcCode: status.INVALID_ARGUMENT,
            message: /may use only letters, digits/,
          },
          {
            what: 'more jobs at once than limits.max_reserve_jobs',
            client: admin,
            options: { queues: ['q'], prefetch: 8 },
            grpcCode: status.INVALID_ARGUMENT,
            message: /the limit is 4 \(limits\.max_reserve_jobs\)|from 1 to 4 \(limits\.max_reserve_jobs\)/,
          },
        ];
        for (const { what, client, options, grpcCode, message } of cases) {
          // Two slots: on the stream, two Work streams meet the refusal; it is still said once.
          const made = watchedWorker(client, { ...options, transport, concurrency: 2, streams: 2 });
          await assertStops(made, grpcCode, message, `${transport}, ${what}`);
        }
      } finally {
        await Promise.all(Object.values(clients).map((c) => c.close()));
      }
    });
  }

  for (const transport of transports) {
    test(`${transport}: RESOURCE_EXHAUSTED (limits.max_waiters) is reported and retried until it passes`, async () => {
      const busy = `stops-busy-${transport}`;
      await quietQueue(busy);
      // Its two Work streams take both places for long polls.
      const holder = admin.worker({ queues: [busy], concurrency: 2, streams: 2, fallback: () => undefined });
      await untilWaiting(busy, 2);
      const queue = `stops-retried-${transport}`;
      const made = watchedWorker(admin, { queues: [queue], transport, concurrency: 1 });
      try {
        const { worker, errors } = made;
        await until(() => errors.length >= 2, 'the refusal, twice');
        assert.equal(errors[0]?.grpcCode, status.RESOURCE_EXHAUSTED);
        assert.match(errors[0]?.message ?? '', /limits\.max_waiters/);
        assert.equal(worker.state, 'running');
        await holder.close();
        const { id } = await admin.enqueue(queue, 't');
        await until(
          async () => (await admin.getJob(id)).state === 'completed',
          'the job, once a place freed',
        );
      } finally {
        await holder.close();
        await made.worker.close({ timeoutMs: 0 });
      }
    });
  }

  test('UNAVAILABLE (a server restart) is reported and retried: both transports work again', async () => {
    const queues = transports.map((transport) => `stops-restart-${transport}`);
    for (const queue of queues) await quietQueue(queue);
    const made = transports.map((transport, i) =>
      watchedWorker(admin, { queues: [queues[i]!], transport, concurrency: 1 }),
    );
    try {
      for (const queue of queues) await untilWaiting(queue, 1);
      t = await t.restartOnSamePort();
      await until(() => made.every(({ errors }) => errors.length > 0), 'both workers to notice');
      for (const { errors } of made)
        assert.equal(errors[0]?.grpcCode, status.UNAVAILABLE, errors[0]?.message);
      // A client that retries UNAVAILABLE while grpc-js connects again (the workers' client does not).
      const producer = SeppClient.connect(t.address, {
        apiKey: adminKey,
        retry: { unavailable: true, maxAttempts: 20, baseDelayMs: 50, maxDelayMs: 200 },
      });
      try {
        const ids = await Promise.all(queues.map(async (queue) => (await producer.enqueue(queue, 't')).id));
        for (const id of ids) {
          await until(
            async () => (await producer.getJob(id)).state === 'completed',
            `job ${id} after the restart`,
          );
        }
      } finally {
        await producer.close();
      }
      for (const { worker } of made) assert.equal(worker.state, 'running');
    } finally {
      await Promise.all(made.map(({ worker }) => worker.close({ timeoutMs: 0 })));
    }
  });
});

/**
 * A stand-in for sepp answering every Work stream and Reserve with the status its
 * `worker_id` names (`status-N`); `status-0` ends the stream with OK, as no sepp does
 * while a worker still asks for jobs; `status-N-ADVICE` adds the trailer `sepp-retry: ADVICE`.
 */
async function standIn(): Promise<{ address: string; close(): void }> {
  const server = new grpc.Server();
  const answerOf = (workerId: string) => {
    const [number, retry] = workerId.replace(/^status-/, '').split('-');
    const code = Number(number);
    const metadata = new grpc.Metadata();
    if (retry !== undefined) metadata.set('sepp-retry', retry);
    return { code, details: `stand-in answers ${status[code]}`, metadata };
  };
  server.addService(QueueServiceService, {
    work: (call: grpc.ServerDuplexStream<WorkRequest, WorkResponse>) => {
      call.once('data', (message: WorkRequest) => {
        const answer =
          message.kind?.$case === 'subscribe' ? answerOf(message.kind.value.workerId) : answerOf('status-13');
        if (answer.code === status.OK) call.end();
        else call.emit('error', answer);
      });
    },
    reserve: (
      call: grpc.ServerUnaryCall<ReserveRequest, ReserveResponse>,
      callback: grpc.sendUnaryData<ReserveResponse>,
    ) => {
      callback(answerOf(call.request.workerId), null);
    },
  });
  const address = await listenOnLoopback(server);
  return { address, close: () => server.forceShutdown() };
}

describe('Worker: every status, from a stand-in server', () => {
  const codes = Object.values(status).filter((c): c is number => typeof c === 'number' && c !== status.OK);
  let server: Awaited<ReturnType<typeof standIn>>;
  let client: SeppClient;
  before(async () => {
    server = await standIn();
    client = SeppClient.connect(server.address);
  });
  after(async () => {
    await client.close();
    server.close();
  });

  /** The table of docs/protocol.md: these stop a worker, every other status is retried. */
  const stops: ReadonlySet<number> = new Set([
    status.INVALID_ARGUMENT,
    status.PERMISSION_DENIED,
    status.UNIMPLEMENTED,
    status.UNAUTHENTICATED,
  ]);

  test('the table: UNAUTHENTICATED, PERMISSION_DENIED, INVALID_ARGUMENT and UNIMPLEMENTED stop', () => {
    assert.deepEqual(fatalStatuses, stops);
  });

  for (const transport of transports) {
    test(`${transport}: a fatal status stops the worker; any other is reported and retried`, async () => {
      for (const code of codes) {
        const what = `${transport}, ${status[code]}`;
        const made = watchedWorker(client, { queues: ['q'], transport, workerId: `status-${code}` });
        if (stops.has(code)) {
          await assertStops(made, code, /stand-in answers|needs an API key/, what);
          continue;
        }
        try {
          await until(() => made.errors.length >= 2, `${what}: reported twice`);
          assert.equal(made.errors[0]?.grpcCode, code, what);
          assert.equal(made.worker.state, 'running', what);
        } finally {
          await made.worker.close({ timeoutMs: 0 });
        }
      }
    });
  }

  for (const transport of transports) {
    test(`${transport}: UNAVAILABLE marked sepp-retry: operator is retried; never stops`, async () => {
      // A server whose storage someone must fix (a refused login, a schema a newer sepp migrated):
      // the Worker keeps backing off, to reach a newer server or this one once fixed.
      const made = watchedWorker(client, {
        queues: ['q'],
        transport,
        workerId: `status-${status.UNAVAILABLE}-operator`,
      });
      try {
        await until(() => made.errors.length >= 3, `${transport}: reported three times`);
        assert.equal(made.errors[0]?.grpcCode, status.UNAVAILABLE);
        assert.equal(made.errors[0]?.retry, 'operator');
        assert.equal(made.errors[0]?.retryable, true);
        assert.equal(made.worker.state, 'running');
        assert.deepEqual(
          made.logger.lines.filter((l) => / stopped: /.test(l.message)),
          [],
        );
      } finally {
        await made.worker.close({ timeoutMs: 0 });
      }
      const never = watchedWorker(client, {
        queues: ['q'],
        transport,
        workerId: `status-${status.UNAVAILABLE}-never`,
      });
      await assertStops(never, status.UNAVAILABLE, /stand-in answers/, `${transport}, never`);
    });
  }

  test('stream: a Work stream the server ends with OK is reported as UNAVAILABLE and opened again', async () => {
    const made = watchedWorker(client, { queues: ['q'], transport: 'stream', workerId: 'status-0' });
    try {
      await until(() => made.errors.length >= 2, 'reported twice');
      assert.equal(made.errors[0]?.grpcCode, status.UNAVAILABLE);
      assert.match(made.errors[0]?.message ?? '', /the server ended the Work stream/);
      assert.equal(made.worker.state, 'running');
    } finally {
      await made.worker.close({ timeoutMs: 0 });
    }
  });
});
