/** `sepp serve` as a process: SIGTERM answers waiting long-polls, checkpoints the WAL and exits 0 quickly. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { credentials } from '@grpc/grpc-js';
import { QueueServiceClient } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import { startServerProcess } from '../helpers/process-server.ts';
import { call, testJob } from '../helpers/server.ts';

test('SIGTERM: long-polls get an empty list, the WAL is checkpointed, exit code 0 within 10 s', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sepp-sigterm-'));
  const server = await startServerProcess(dataDir);
  try {
    const port = server.port;
    const client = new QueueServiceClient(`127.0.0.1:${port}`, credentials.createInsecure());
    const job = testJob('q');
    await call(client, client.enqueue, { job });
    const reserve = {
      queues: ['q'],
      maxJobs: 1,
      leaseDurationMs: 0,
      waitTimeoutMs: 30_000,
      workerId: '',
      maxResponseBytes: 0,
    };
    assert.equal((await call(client, client.reserve, reserve)).jobs.length, 1);
    const waiting = call(client, client.reserve, reserve);
    // The signal must find the long-poll waiting: poll until the server reports it.
    for (;;) {
      const { queues } = await call(client, client.listQueues, { pageSize: 0, pageToken: '' });
      if (queues.find((q) => q.name === 'q')?.waitingWorkers === 1) break;
    }
    const startedMs = Date.now();
    const exited = server.stop('SIGTERM');
    const { jobs } = await waiting;
    assert.deepEqual(jobs, []);
    const code = await exited;
    assert.equal(code, 0);
    assert.ok(Date.now() - startedMs < 10_000, 'exits within 10 s');
    assert.equal(
      statSync(join(dataDir, 'sepp.db-wal'), { throwIfNoEntry: false })?.size ?? 0,
      0,
      'WAL checkpointed',
    );
    assert.match(server.logs(), /"server.stopped"/);
    client.close();
  } finally {
    await server.stop('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('SIGTERM with an OTLP collector that never answers: exit code 0 once stopped, not the hard stop', async () => {
  // The collector takes each export and never answers. The exporters wait and retry for
  // up to their 10 s export timeout, longer than this server's shutdown_timeout_ms: a
  // process that waited for them would end in the hard stop (exit 1, server.shutdown_timeout).
  let exports = 0;
  const collector = createServer((request) => {
    exports++;
    request.resume();
  });
  await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
  const dir = mkdtempSync(join(tmpdir(), 'sepp-sigterm-otlp-'));
  const configFile = join(dir, 'sepp.toml');
  writeFileSync(
    configFile,
    `[server]\nshutdown_timeout_ms = 8000\n[telemetry]\notlp_endpoint = "http://127.0.0.1:${(collector.address() as AddressInfo).port}"\n`,
  );
  const server = await startServerProcess(join(dir, 'data'), ['--config', configFile]);
  try {
    assert.equal(await server.stop('SIGTERM'), 0, server.logs());
    assert.match(server.logs(), /"server.stopped"/);
    assert.doesNotMatch(server.logs(), /server.shutdown_timeout/);
    assert.ok(exports >= 1, 'the last metrics export reached the collector, which held it');
  } finally {
    await server.stop('SIGKILL');
    collector.closeAllConnections();
    collector.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
