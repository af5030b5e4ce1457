/**
 * What a new SDK user meets first (issue 30): the client takes the server and the key
 * from SEPP_SERVER and SEPP_API_KEY as `sepp admin new-api-key` says; an UNAUTHENTICATED
 * answer names the SDK's option, not gRPC metadata; a Worker whose key is refused stops
 * with that error instead of idling; a handler that throws is logged once per failure
 * with the job id and the error; grpc-js's empty "Resolution note:" never shows.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SeppClient, SeppError, type WorkerLogger } from '../../clients/typescript/src/index.ts';
import { registerSecret } from '../helpers/secret-log.ts';
import { apiKeysToml, startTestServer, type TestServer } from '../helpers/server.ts';

const workerKey = 'api-keys-worker-key-0123456789';

/** A logger that keeps every line, by level. */
function recordingLogger(): WorkerLogger & {
  lines: { level: string; message: string; details: unknown[] }[];
} {
  const lines: { level: string; message: string; details: unknown[] }[] = [];
  const at =
    (level: string) =>
    (message: string, ...details: unknown[]) =>
      lines.push({ level, message, details });
  return { lines, info: at('info'), warn: at('warn'), error: at('error') };
}

/** Sets environment variables for the length of `body`. */
async function withEnv<T>(vars: Record<string, string>, body: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  Object.assign(process.env, vars);
  try {
    return await body();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

describe('API keys from the environment, and a Worker that speaks up', () => {
  let t: TestServer;
  before(async () => {
    registerSecret('worker key', workerKey);
    t = await startTestServer({ toml: apiKeysToml([{ name: 'w', role: 'admin', key: workerKey }]) });
  });
  after(() => t.dispose());

  test('SeppClient.connect() takes SEPP_SERVER and SEPP_API_KEY when given nothing', async () => {
    const client = await withEnv({ SEPP_SERVER: t.address, SEPP_API_KEY: workerKey }, async () =>
      SeppClient.connect(),
    );
    try {
      assert.equal(client.address, t.address);
      const { id } = await client.enqueue('from-env', 't');
      assert.equal((await client.getJob(id)).queue, 'from-env');
    } finally {
      await client.close();
    }
  });

  test('UNAUTHENTICATED names the option and the variable, not gRPC metadata', async () => {
    const none = SeppClient.connect(t.address);
    const wrong = SeppClient.connect(t.address, { apiKey: 'not-the-key-0123456789' });
    try {
      await assert.rejects(none.listQueues(), (e: unknown) => {
        assert.ok(e instanceof SeppError);
        assert.equal(e.code, 'unauthenticated');
        assert.match(
          e.message,
          /needs an API key: pass apiKey to SeppClient\.connect\(\), or set SEPP_API_KEY/,
        );
        assert.doesNotMatch(e.message, /authorization|Bearer|metadata/);
        return true;
      });
      await assert.rejects(none.enqueue('q', 't'), /pass apiKey to SeppClient\.connect\(\)/);
      await assert.rejects(
        wrong.listQueues(),
        /refused the API key .*: check apiKey of SeppClient\.connect\(\), or SEPP_API_KEY/,
      );
    } finally {
      await none.close();
      await wrong.close();
    }
  });

  test('a Worker whose key is refused stops with the error instead of idling', async () => {
    const client = SeppClient.connect(t.address, { apiKey: 'not-the-key-0123456789' });
    const logger = recordingLogger();
    try {
      const worker = client.worker({ queues: ['q'], handlers: { t: () => {} }, logger });
      await assert.rejects(
        worker.wait(),
        (e: unknown) => e instanceof SeppError && e.code === 'unauthenticated',
      );
      assert.equal(worker.state, 'closed');
      const errors = logger.lines.filter((l) => l.level === 'error');
      assert.equal(errors.length, 1, JSON.stringify(logger.lines));
      assert.match(errors[0]?.message ?? '', /^sepp worker \S+ stopped: the server refused the API key/);
    } finally {
      await client.close();
    }
  });

  test('a handler that throws is logged once per failure, with the job id and the error', async () => {
    const client = SeppClient.connect(t.address, { apiKey: workerKey });
    const logger = recordingLogger();
    try {
      const { id } = await client.enqueue('failing', 'flaky', undefined, { maxAttempts: 2 });
      const boom = new Error('the SMTP server said 451');
      const worker = client.worker({
        queues: ['failing'],
        handlers: {
          flaky: () => {
            throw boom;
          },
        },
        logger,
      });
      const dead = new Promise<void>((resolve) =>
        worker.on('failed', (_job, _error, outcome) => {
          if (outcome.state === 'dead') resolve();
        }),
      );
      // The first failure is retried after the queue's backoff: run it now.
      worker.once('failed', () => void client.updateJob(id, { runNow: true }).catch(() => {}));
      await dead;
      await worker.close();
      const warnings = logger.lines.filter((l) => l.level === 'warn');
      assert.equal(warnings.length, 2, JSON.stringify(warnings.map((w) => w.message)));
      assert.match(
        warnings[0]?.message ?? '',
        new RegExp(
          `^sepp worker \\S+: job ${id} \\(failing/flaky, attempt 1 of 2\\) failed: the SMTP server said 451; retried at `,
        ),
      );
      assert.match(
        warnings[1]?.message ?? '',
        /attempt 2 of 2\) failed: the SMTP server said 451; dead-lettered$/,
      );
      assert.equal(warnings[0]?.details[0], boom, 'the error itself, with its stack');
    } finally {
      await client.close();
    }
  });

  test("grpc-js's connection error reads without its empty Resolution note", async () => {
    const client = SeppClient.connect('127.0.0.1:1');
    const logger = recordingLogger();
    try {
      await assert.rejects(client.getServerInfo({ deadlineMs: 5000 }), (e: unknown) => {
        assert.ok(e instanceof SeppError);
        assert.doesNotMatch(e.message, /Resolution note|Error: connect/);
        assert.match(e.message, /ECONNREFUSED/);
        return true;
      });
      const worker = client.worker({
        queues: ['q'],
        handlers: { t: () => {} },
        logger,
        reconnect: { baseDelayMs: 10, maxDelayMs: 20 },
      });
      while (logger.lines.length === 0) await new Promise((r) => setTimeout(r, 20));
      await worker.close();
      assert.equal(worker.state, 'closed');
      for (const line of logger.lines) assert.doesNotMatch(line.message, /Resolution note/);
    } finally {
      await client.close();
    }
  });
});
