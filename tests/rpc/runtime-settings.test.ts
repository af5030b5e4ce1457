/**
 * Every queue setting changed at run time (SetQueueSettings, through the
 * SDK's setQueueSettings) applies to the next job, over the unary calls and
 * over the streams alike; the override survives a restart; a reset gives the
 * config file's value back, and that too survives a restart. Each case
 * observes one behaviour of the next job (its attempt budget, a nack's delay,
 * a lease's length, a refusal, a retention) before the change, after it,
 * after a restart, after the reset and after another restart.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { ServiceError } from '@grpc/grpc-js';
import { JobState, RejectionReason } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import { SeppClient } from '../../clients/typescript/src/index.ts';
import { FakeClock } from '../../src/engine/clock.ts';
import { call, startTestServer, type TestServer, testJob } from '../helpers/server.ts';
import { streamTransport, type Transport, unaryTransport } from '../helpers/transports.ts';

interface Case {
  /** The setting, as in the config file. */
  key: string;
  /** Its new value, as an operator types it. */
  value: string;
  /** More lines of the queue's [queues.NAME] that make the observation exact (no jitter, say). */
  file?: string;
  /** What the next job shows before the change and after it. */
  before: unknown;
  after: unknown;
  observe(ctx: Observer): Promise<unknown>;
}

interface Observer {
  t: TestServer;
  clock: FakeClock;
  transport: Transport;
  queue: string;
}

let keySeq = 0;

/** The job's state; `gone` once its row is deleted (GetJob then answers its outcome only, or NOT_FOUND). */
async function stateOf(t: TestServer, jobId: string): Promise<JobState | 'gone'> {
  return call(t.client, t.client.getJob, { jobId }).then(
    (r) => (r.job?.outcomeOnly ? ('gone' as const) : (r.job?.state ?? JobState.UNSPECIFIED)),
    (e: ServiceError) => {
      assert.match(e.details, /does not exist/);
      return 'gone' as const;
    },
  );
}

/** Enqueues, leases and nacks a job `failures` times (promoting it in between); returns the last delay. */
async function nackDelay({ t, clock, transport, queue }: Observer, failures: number): Promise<number> {
  const accepted = await transport.enqueue(testJob(queue));
  assert.ok('jobId' in accepted);
  let delayMs = 0;
  for (let i = 0; i < failures; i++) {
    if (i > 0) {
      clock.advance(delayMs);
      await t.server.engine.runMaintenance();
    }
    const leased = await transport.lease(queue);
    assert.equal(leased.jobId, accepted.jobId);
    const nacked = await transport.nack(leased);
    delayMs = nacked.runAtMs - clock.nowMs();
  }
  // Out of the way of the next observation, which promotes what is due.
  await call(t.client, t.client.cancelJob, { jobId: accepted.jobId });
  return delayMs;
}

async function enqueueOutcome({ transport, queue }: Observer, payload = 'x', type = 't'): Promise<string> {
  const result = await transport.enqueue(testJob(queue, { payload: Buffer.from(payload), type }));
  return 'jobId' in result ? 'accepted' : (RejectionReason[result.rejected] ?? String(result.rejected));
}

const cases: readonly Case[] = [
  {
    key: 'max_attempts',
    value: '3',
    before: 5,
    after: 3,
    async observe({ t, transport, queue }) {
      const result = await transport.enqueue(testJob(queue));
      assert.ok('jobId' in result);
      return (await call(t.client, t.client.getJob, { jobId: result.jobId })).job?.maxAttempts;
    },
  },
  {
    key: 'backoff_base_ms',
    value: '7s',
    file: 'backoff_jitter = 0',
    before: 1000,
    after: 7000,
    observe: (o) => nackDelay(o, 1),
  },
  {
    key: 'backoff_factor',
    value: '10',
    file: 'backoff_jitter = 0',
    before: 2000,
    after: 10_000,
    observe: (o) => nackDelay(o, 2),
  },
  {
    key: 'backoff_cap_ms',
    value: '5s',
    file: 'backoff_jitter = 0\nbackoff_base_ms = "2s"\nbackoff_factor = 10',
    before: 20_000,
    after: 5000,
    observe: (o) => nackDelay(o, 2),
  },
  {
    key: 'backoff_jitter',
    value: '0.5',
    file: 'backoff_jitter = 0\nbackoff_base_ms = "10s"',
    before: 'exact',
    after: 'spread',
    async observe(o) {
      const delays = [await nackDelay(o, 1), await nackDelay(o, 1), await nackDelay(o, 1)];
      if (delays.every((d) => d === 10_000)) return 'exact';
      return delays.every((d) => d >= 5000 && d <= 15_000) ? 'spread' : `out of range: ${delays}`;
    },
  },
  {
    key: 'default_lease_ms',
    value: '45s',
    before: 30_000,
    after: 45_000,
    async observe({ clock, transport, queue }) {
      await transport.enqueue(testJob(queue));
      const leased = await transport.lease(queue);
      await transport.ack(leased);
      return leased.leaseDeadlineMs - clock.nowMs();
    },
  },
  {
    key: 'max_lease_ms',
    value: '20s',
    file: 'default_lease_ms = "10s"',
    before: 60_000,
    after: 20_000,
    async observe({ clock, transport, queue }) {
      await transport.enqueue(testJob(queue));
      const leased = await transport.lease(queue, 60_000);
      await transport.ack(leased);
      return leased.leaseDeadlineMs - clock.nowMs();
    },
  },
  {
    key: 'max_payload_bytes',
    value: '10',
    before: 'accepted',
    after: 'PAYLOAD_TOO_LARGE',
    observe: (o) => enqueueOutcome(o, 'x'.repeat(11)),
  },
  {
    key: 'max_depth',
    value: '1',
    before: 'accepted',
    after: 'QUEUE_FULL',
    // Every observation leaves its job ready, so the queue holds at least one.
    observe: (o) => enqueueOutcome(o),
  },
  {
    key: 'dedup_window_ms',
    value: '10s',
    before: true,
    after: false,
    async observe({ clock, transport, queue }) {
      const key = `key-${++keySeq}`;
      const first = await transport.enqueue(testJob(queue, { idempotencyKey: key }));
      assert.ok('jobId' in first);
      // Finished (with the jobs earlier observations left ready): an unfinished job
      // holds its key beyond the window (issue 17).
      for (let leased = await transport.lease(queue); ; leased = await transport.lease(queue)) {
        await transport.ack(leased);
        if (leased.jobId === first.jobId) break;
      }
      clock.advance(11_000);
      const again = await transport.enqueue(testJob(queue, { idempotencyKey: key }));
      assert.ok('jobId' in again);
      return again.deduplicated;
    },
  },
  {
    key: 'dead_retention_ms',
    value: '5s',
    file: 'max_attempts = 1',
    before: JobState.DEAD,
    after: 'gone',
    async observe({ t, clock, transport, queue }) {
      await transport.enqueue(testJob(queue));
      const leased = await transport.lease(queue);
      assert.equal((await transport.nack(leased)).state, JobState.DEAD);
      // Retention sweeps run once a minute.
      clock.advance(61_000);
      await t.server.engine.runMaintenance();
      return stateOf(t, leased.jobId);
    },
  },
  {
    key: 'completed_retention_ms',
    value: '1h',
    before: 'gone',
    after: JobState.COMPLETED,
    async observe({ t, transport, queue }) {
      await transport.enqueue(testJob(queue));
      const leased = await transport.lease(queue);
      await transport.ack(leased);
      return stateOf(t, leased.jobId);
    },
  },
  {
    key: 'allowed_types',
    value: '["send", "resend"]',
    before: 'accepted',
    after: 'JOB_TYPE_NOT_ALLOWED',
    observe: (o) => enqueueOutcome(o, 'x', 'welcome'),
  },
];

const transports = ['unary', 'stream'] as const;
const queueOf = (c: Case, transport: string) => `${c.key}-${transport}`;

describe('queue settings changed at run time', () => {
  const clock = new FakeClock();
  let t: TestServer;
  let sdk: SeppClient;

  const toml = cases
    .flatMap((c) => transports.map((tr) => `[queues.${queueOf(c, tr)}]\n${c.file ?? ''}\n`))
    .join('\n');

  const observeAll = async (phase: 'before' | 'after') => {
    const wrong: string[] = [];
    for (const name of transports) {
      const transport = name === 'unary' ? unaryTransport(t.client) : streamTransport(t.connect());
      try {
        for (const c of cases) {
          const seen = await c.observe({ t, clock, transport, queue: queueOf(c, name) });
          if (seen !== c[phase]) wrong.push(`${c.key} over ${name}: expected ${c[phase]}, saw ${seen}`);
        }
      } finally {
        transport.close();
      }
    }
    assert.deepEqual(wrong, [], `${phase}`);
  };

  const sources = async () => {
    const queues = await sdk.listQueues();
    return cases.flatMap((c) =>
      transports.map((tr) => {
        const q = queues.find((x) => x.name === queueOf(c, tr));
        const setting = q?.settingValues.find((s) => s.key === c.key);
        return `${q?.name}: ${setting?.source}`;
      }),
    );
  };

  before(async () => {
    t = await startTestServer({ clock, toml });
    sdk = SeppClient.connect(t.address);
  });
  after(async () => {
    await sdk.close();
    await t.dispose();
  });

  test('each setting applies to the next job over both transports, survives restarts and resets', async () => {
    await observeAll('before');

    for (const c of cases) {
      for (const tr of transports) {
        const queue = await sdk.setQueueSettings(queueOf(c, tr), { [c.key]: c.value });
        const setting = queue.settingValues.find((s) => s.key === c.key);
        assert.equal(setting?.source, 'override', c.key);
      }
    }
    await observeAll('after');

    // A restart keeps every override.
    await sdk.close();
    t = await t.restart();
    sdk = SeppClient.connect(t.address);
    assert.ok(
      (await sources()).every((s) => s.endsWith(': override')),
      'overrides survive a restart',
    );
    await observeAll('after');

    // A reset gives the file's value back, at once and after a restart.
    for (const c of cases) {
      for (const tr of transports) {
        const queue = await sdk.resetQueueSettings(queueOf(c, tr), [c.key]);
        const setting = queue.settingValues.find((s) => s.key === c.key);
        assert.notEqual(setting?.source, 'override', c.key);
        assert.deepEqual(setting?.value, setting?.fileValue);
      }
    }
    await observeAll('before');
    await sdk.close();
    t = await t.restart();
    sdk = SeppClient.connect(t.address);
    assert.ok(
      (await sources()).every((s) => !s.endsWith(': override')),
      'resets survive a restart',
    );
    await observeAll('before');
    assert.deepEqual(await t.server.engine.counterMismatches(), []);
  });
});
