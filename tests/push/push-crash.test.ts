/**
 * Push delivery survives `kill -9`: a server process pushing a queue to a
 * local receiver is killed while deliveries are in flight, twice, and started
 * again on the same data directory. Afterwards every job is completed (none
 * lost), every delivery the receiver got was signed, and the jobs that were
 * in flight at a kill were delivered again with a higher attempt
 * (at-least-once: the attempt number tells the receiver). The counts are
 * printed for the record.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { apiCall } from '../helpers/http-api.ts';
import { type LaunchedServer, launchServerProcess } from '../helpers/process-server.ts';
import { startReceiver } from '../helpers/push-receiver.ts';
import { registerSecret } from '../helpers/secret-log.ts';

const secret = 'push-crash-secret-4b7a29e1f0';
registerSecret('push signing secret', secret);
const jobs = 150;

function httpUrlOf(logs: string): string {
  const line = logs.split('\n').find((l) => l.includes('"server.started"'));
  const http = (JSON.parse(line ?? '{}') as { http?: string }).http;
  if (http === undefined || !http.startsWith('http://')) assert.fail(`the HTTP API listens: ${line}`);
  return http;
}

test('kill -9 mid-push: every job ends completed, in-flight ones are delivered again', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-push-crash-'));
  const dataDir = join(dir, 'data');
  const received: { jobId: string; attempt: number; signed: boolean }[] = [];
  // Each answer takes 20-80 ms, so a kill always finds deliveries open.
  const receiver = await startReceiver(secret, (d, res) => {
    received.push({ jobId: d.json.jobId, attempt: d.json.attempt, signed: d.signed });
    setTimeout(
      () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ seen: d.json.attempt }));
      },
      20 + Math.floor(Math.random() * 60),
    );
  });
  const config = join(dir, 'sepp.toml');
  // At most 8 deliveries open per server (max_in_flight), so a kill finds 8 leases open. The
  // queue leaves room beyond them (no max_leased): the leases a killed server held run
  // out only timeout_ms + 10 s later (src/push/pusher.ts), and meanwhile the restarted
  // server goes on delivering the rest instead of waiting for them (20-24 s less a run).
  writeFileSync(
    config,
    '[queues.crash]\nmax_attempts = 20\nbackoff_base_ms = "50ms"\ncompleted_retention_ms = "1h"\n' +
      `[queues.crash.push]\nurl = "${receiver.url}"\nsecret_env = "PUSH_SECRET"\ntimeout_ms = "1s"\n` +
      'max_in_flight = 8\nallow_private_targets = true\n',
  );
  const env = { PUSH_SECRET: secret, SEPP_HTTP_LISTEN: '127.0.0.1:0', SEPP_DISK_RESERVE_BYTES: '0' };
  const launch = () => launchServerProcess(dataDir, ['--config', config], { env });
  let server: LaunchedServer | undefined;
  try {
    server = launch();
    const url = httpUrlOf((await server.ready).logs());
    const ids: string[] = [];
    for (let i = 0; i < jobs; i += 50) {
      const batch = await apiCall<{ results: { accepted: { jobId: string } }[] }>(url, '/v1/jobs/batch', {
        body: {
          jobs: Array.from({ length: 50 }, (_, j) => ({ queue: 'crash', type: 't', payload: { i: i + j } })),
        },
        agent: false,
      });
      assert.equal(batch.status, 200, batch.text);
      ids.push(...batch.json.results.map((r) => r.accepted.jobId));
    }
    const kills: { deliveredBefore: number }[] = [];
    for (const share of [0.25, 0.6]) {
      await receiver.waitFor(Math.floor(jobs * share), 60_000);
      kills.push({ deliveredBefore: received.length });
      await server.stop('SIGKILL');
      server = launch();
      await server.ready;
    }
    const finalUrl = httpUrlOf(server.logs());
    // The leases of the deliveries open at each kill run out (timeout_ms + 10 s), then they come
    // again. Each round reads the jobs not yet completed or dead (both final here), not all 150.
    const deadline = Date.now() + 90_000;
    const stateOf = new Map<string, string>();
    const ended = (id: string) => stateOf.get(id) === 'completed' || stateOf.get(id) === 'dead';
    for (;;) {
      for (const id of ids.filter((i) => !ended(i))) {
        const answer = await apiCall<{ job: { state: string } }>(finalUrl, `/v1/jobs/${id}`, {
          agent: false,
        });
        stateOf.set(id, answer.json.job.state);
      }
      if (ids.every(ended) || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const states = ids.map((id) => stateOf.get(id) ?? 'unread');
    const completed = states.filter((s) => s === 'completed').length;
    const dead = states.filter((s) => s === 'dead').length;
    const redelivered = new Set(received.filter((r) => r.attempt > 1).map((r) => r.jobId));
    const distinct = new Set(received.map((r) => r.jobId));
    console.log(
      `push crash: ${jobs} jobs, 2 kills (after ${kills.map((k) => k.deliveredBefore).join(' and ')} deliveries); ` +
        `${received.length} deliveries of ${distinct.size} jobs, ${redelivered.size} delivered again with a higher attempt; ` +
        `ended ${completed} completed, ${dead} dead, ${jobs - completed - dead} neither`,
    );
    assert.equal(
      completed + dead,
      jobs,
      `every job ended: ${states.filter((s) => s !== 'completed').join(', ')}`,
    );
    assert.equal(dead, 0, 'attempts were plenty: none dead');
    assert.equal(distinct.size, jobs, 'every job reached the receiver');
    assert.ok(
      received.every((r) => r.signed),
      'every delivery was signed',
    );
    assert.ok(redelivered.size > 0, 'deliveries open at a kill came again');
  } finally {
    await server?.stop('SIGKILL');
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
