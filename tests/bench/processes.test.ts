/** The benchmark harness starts servers with a clean environment, not its own. */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { spawnTracked } from '../../bench/lib/processes.ts';

test('a server the harness starts sees none of the harness’s settings, only PATH, HOME, the locale and its own', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-bench-env-'));
  const saved = { ...process.env };
  try {
    Object.assign(process.env, {
      SEPP_DURABILITY: 'relaxed',
      GRPC_TRACE: 'all',
      NODE_OPTIONS: '--max-old-space-size=64',
      REDIS_URL: 'redis://elsewhere',
    });
    const server = await spawnTracked(
      {
        name: 'env-probe',
        command: process.execPath,
        args: ['-e', 'console.log(JSON.stringify(process.env))'],
        env: { PROBE: 'given' },
      },
      dir,
    );
    // The probe prints and exits by itself; the deadline is only a hang guard.
    const deadline = Date.now() + 30_000;
    while (!readFileSync(server.logFile, 'utf8').endsWith('\n')) {
      if (Date.now() > deadline) assert.fail('the probe printed nothing in 30 s');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await server.stop(5000);
    const seen = JSON.parse(readFileSync(server.logFile, 'utf8').trim()) as Record<string, string>;
    for (const name of ['SEPP_DURABILITY', 'GRPC_TRACE', 'NODE_OPTIONS', 'REDIS_URL']) {
      assert.equal(seen[name], undefined, `${name} reached the server`);
    }
    assert.equal(seen.PROBE, 'given');
    assert.equal(seen.PATH, process.env.PATH);
  } finally {
    process.env = saved;
    rmSync(dir, { recursive: true, force: true });
  }
});
