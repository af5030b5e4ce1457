/**
 * A worker killed mid-job (SPEC §11): a worker process (worker-death-child.ts,
 * the SDK Worker) leases jobs with a 2 s lease and holds them for longer
 * than a lease (the Worker extends it), nothing reaching another worker
 * meanwhile; then it is killed with SIGKILL, and the other worker, already
 * waiting, must get every one of those jobs within lease + 1 s of the kill,
 * with the attempt incremented.
 *
 * Real time (a lease has to run out on a real server), bounded: a few seconds.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { SeppClient } from '../../clients/typescript/src/index.ts';
import { childScriptArgs } from '../helpers/child-script.ts';
import { type ServerProcess, startServerProcess } from '../helpers/process-server.ts';

const queue = 'mortal';
const leaseMs = 2000;
const jobCount = 5;
const childScript = new URL('./worker-death-child.ts', import.meta.url).pathname;

/** Resolves with the child's `leased` lines once it has started `count` jobs. */
function leasedByChild(child: ChildProcess, count: number): Promise<Map<string, number>> {
  return new Promise((resolve, reject) => {
    const leased = new Map<string, number>();
    let stdout = '';
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      for (const line of stdout.split('\n').slice(0, -1)) {
        const [word, id, attempt] = line.split(' ');
        if (word === 'leased' && id !== undefined) leased.set(id, Number(attempt));
      }
      if (leased.size >= count) resolve(leased);
    });
    child.on('exit', (code, signal) =>
      reject(new Error(`the worker process ended (${signal ?? code}) before leasing: ${stderr}`)),
    );
  });
}

test(`a worker killed mid-job: its ${jobCount} jobs reach another worker within lease + 1 s`, {
  timeout: 120_000,
}, async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sepp-worker-death-'));
  let server: ServerProcess | undefined;
  let child: ChildProcess | undefined;
  let client: SeppClient | undefined;
  try {
    server = await startServerProcess(dataDir);
    const address = `127.0.0.1:${server.port}`;
    client = SeppClient.connect(address);
    const ids = new Set<string>();
    for (let i = 0; i < jobCount; i++) ids.add((await client.enqueue(queue, 'work', `job ${i}`)).id);

    child = spawn(
      process.execPath,
      [...childScriptArgs(childScript), address, queue, String(leaseMs), String(jobCount)],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const leased = await leasedByChild(child, jobCount);
    assert.deepEqual([...leased.keys()].sort(), [...ids].sort(), 'the doomed worker holds every job');
    assert.ok([...leased.values()].every((attempt) => attempt === 1));

    // The survivor is waiting before the kill, so what is measured is the server's part.
    const redelivered = new Map<string, { attempt: number; afterKillMs: number }>();
    const duplicates: string[] = [];
    let killedAtMs = Number.NaN;
    let allBack: () => void = () => {};
    const back = new Promise<void>((resolve) => {
      allBack = resolve;
    });
    const survivor = client.worker({
      queues: [queue],
      concurrency: jobCount,
      leaseMs: 30_000,
      workerId: 'survivor',
      fallback: (job) => {
        if (redelivered.has(job.id)) duplicates.push(job.id);
        redelivered.set(job.id, { attempt: job.attempt, afterKillMs: performance.now() - killedAtMs });
        if (redelivered.size === jobCount) allBack();
      },
    });
    for (let i = 0; ; i++) {
      const waiting = (await client.listQueues()).find((q) => q.name === queue)?.waitingWorkers ?? 0;
      if (waiting > 0) break;
      assert.ok(i < 200, 'the survivor is waiting for jobs');
      await sleep(25);
    }
    // Longer than a lease: while the doomed worker lives it extends its leases, so
    // what comes back after the kill comes back because the worker died.
    await sleep(leaseMs + 500);
    assert.equal(redelivered.size, 0, 'nothing reaches the survivor while the doomed worker lives');

    killedAtMs = performance.now();
    child.kill('SIGKILL');
    const limitMs = leaseMs + 1000;
    // Wait a little past the limit, so that a late job is reported with its time rather than as a
    // timeout; then the wait is cancelled (left pending, it kept the file's process 4 s past its test).
    const late = new AbortController();
    await Promise.race([back, sleep(limitMs + 3000, undefined, { signal: late.signal })]);
    late.abort();
    const timings = [...redelivered.values()].map((r) => Math.round(r.afterKillMs));
    console.log(
      `worker death: lease ${leaseMs} ms; ${redelivered.size}/${jobCount} jobs redelivered ` +
        `${timings.sort((a, b) => a - b).join(', ')} ms after the kill (limit ${limitMs} ms)`,
    );
    assert.deepEqual([...redelivered.keys()].sort(), [...ids].sort(), 'every job came back');
    assert.deepEqual(duplicates, [], 'each job reached the survivor once');
    for (const [id, { attempt, afterKillMs }] of redelivered) {
      assert.equal(attempt, (leased.get(id) ?? 0) + 1, `job ${id}: the attempt grows on redelivery`);
      assert.ok(afterKillMs <= limitMs, `job ${id} came back ${Math.round(afterKillMs)} ms after the kill`);
    }
    await survivor.close();
    const counts = (await client.listQueues()).find((q) => q.name === queue)?.counts;
    assert.deepEqual(
      { ready: counts?.ready, leased: counts?.leased, dead: counts?.dead },
      { ready: 0, leased: 0, dead: 0 },
      'the survivor acked every job',
    );
  } finally {
    child?.kill('SIGKILL');
    await client?.close();
    await server?.stop('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  }
});
