/**
 * Smoke test of the single executable as a user gets it: built from this checkout, copied
 * ALONE into an empty directory outside the repository, run with a bare environment (no
 * node_modules, no repository, no node on PATH that could help).
 *
 * The binary is built fresh into a temporary directory (about 10 s), or taken from
 * SEPP_SEA_BINARY: the one scripts/run-tests.mjs built once for the run (build.mjs, what
 * `npm run build` runs), or one CI built already. Each step is one `test()` in the suite
 * below sharing `sepp()`; later steps (serve, enqueue/reserve/ack, backup, SIGTERM) go
 * after the existing ones.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, type SpawnSyncReturns, spawn, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { credentials } from '@grpc/grpc-js';
import { QueueServiceClient } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import { startOtlpReceiver } from '../helpers/otlp-receiver.ts';
import { captureOutput } from '../helpers/secret-log.ts';
import { call, testJob } from '../helpers/server.ts';
import { allowedSyscalls, commandExists, tracedSyscalls } from './syscalls.ts';
import { readUnitDirectives } from './unit-file.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('single executable, copied alone into an empty directory', { timeout: 180_000 }, () => {
  let work = '';
  /** The private TMPDIR of every run, so leftovers of the binary are ours to see. */
  let tmp = '';
  let exe = '';

  before(() => {
    work = mkdtempSync(join(tmpdir(), 'sepp-smoke-'));
    const home = join(work, 'home');
    tmp = join(work, 'tmp');
    for (const dir of [home, tmp]) mkdirSync(dir);
    exe = join(home, 'sepp');
    copyFileSync(process.env.SEPP_SEA_BINARY ?? buildInto(join(work, 'build')), exe);
  });
  after(() => rmSync(work, { recursive: true, force: true }));

  /** Runs the copied binary in its own directory with nothing but PATH and TMPDIR set (and `env`). */
  function seppWith(env: NodeJS.ProcessEnv, ...args: string[]): SpawnSyncReturns<string> {
    return spawnSync(exe, args, {
      cwd: join(work, 'home'),
      env: { PATH: '/usr/bin:/bin', TMPDIR: tmp, ...env },
      encoding: 'utf8',
      timeout: 30_000,
    });
  }

  function sepp(...args: string[]): SpawnSyncReturns<string> {
    return seppWith({}, ...args);
  }

  test('--version prints the package version and the git commit', () => {
    const run = sepp('--version');
    assert.equal(run.status, 0, run.stderr);
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
    assert.match(
      run.stdout.trim(),
      new RegExp(`^sepp ${pkg.version.replaceAll('.', '\\.')} \\([0-9a-f]{7,}(-dirty)?\\)$`),
    );
  });

  test('selftest loads the embedded SQLite addon and verifies every embedded asset', () => {
    const run = sepp('selftest');
    assert.equal(run.status, 0, `${run.stdout}${run.stderr}`);
    assert.match(run.stdout, /journal_mode=wal, addon .*\/sepp-native-\d+-\w+\/better_sqlite3\.node/);
    assert.match(run.stdout, /\d+ embedded assets, \d+ bytes, sha256 verified/);
    assert.match(run.stdout, /^OK$/m);
    assert.deepEqual(readdirSync(tmp), [], 'the private native addon directory is removed on exit');
  });

  test("a V8 flag in the user's NODE_OPTIONS: the same output, Node's code cache warning and how to drop it", () => {
    // The flag makes V8 refuse the embedded code cache, and Node says so before sepp runs
    // (docs/operations.md, "Node.js options", shows these lines and the remedy).
    const plain = sepp('--version');
    const flagged = seppWith({ NODE_OPTIONS: '--max-semi-space-size=32' }, '--version');
    assert.equal(flagged.status, 0, flagged.stderr);
    assert.equal(flagged.stdout, plain.stdout);
    assert.match(
      flagged.stderr,
      /^\(node:\d+\) Warning: Code cache data rejected\.\n\(Use `sepp --trace-warnings \.\.\.` to show where the warning was created\)\n$/,
    );
    const quiet = seppWith({ NODE_OPTIONS: '--max-semi-space-size=32 --no-warnings' }, '--version');
    assert.deepEqual([quiet.status, quiet.stdout, quiet.stderr], [0, plain.stdout, '']);
  });

  test('an unknown command fails with one line that says so', () => {
    const run = sepp('no-such-command');
    assert.equal(run.status, 2);
    assert.equal(run.stderr, 'sepp: unknown command "no-such-command" (sepp --help lists the commands)\n');
  });

  test('a TMPDIR that does not exist: --version and the operator commands work, serve says why it cannot start', () => {
    const missing = join(work, 'no-such-tmp');
    const run = (...args: string[]) =>
      spawnSync(exe, args, {
        cwd: join(work, 'home'),
        env: { PATH: '/usr/bin:/bin', TMPDIR: missing },
        encoding: 'utf8',
        timeout: 30_000,
      });
    const version = run('--version');
    assert.equal(version.status, 0, version.stderr);
    assert.equal(version.stderr, '');
    const queues = run('queues', '--server', '127.0.0.1:1');
    assert.equal(queues.status, 3, queues.stderr);
    assert.match(queues.stderr, /^sepp: cannot reach sepp at 127\.0\.0\.1:1: connection refused/);
    const serve = run(
      'serve',
      '--data-dir',
      join(work, 'never'),
      '--grpc-listen',
      '127.0.0.1:0',
      '--admin-listen',
      '127.0.0.1:0',
    );
    assert.equal(serve.status, 1);
    assert.equal(
      serve.stderr,
      `sepp: cannot start: cannot create a private directory in ${missing} (ENOENT): this executable unpacks ` +
        'its SQLite addon there; point TMPDIR at a writable directory\n',
    );
  });

  /** Starts `sepp serve` from the copied binary; resolves once it logs its gRPC port. */
  async function serve(dataDir: string): Promise<{ child: ChildProcess; port: number; logs: () => string }> {
    const child = spawn(
      exe,
      [
        'serve',
        '--data-dir',
        dataDir,
        '--grpc-listen',
        '127.0.0.1:0',
        '--admin-listen',
        '127.0.0.1:0',
        '--log-format',
        'json',
      ],
      {
        cwd: join(work, 'home'),
        env: { PATH: '/usr/bin:/bin', TMPDIR: tmp },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let logs = '';
    const capture = captureOutput('process');
    const port = await new Promise<number>((resolve, reject) => {
      child.stderr?.on('data', (chunk: Buffer) => {
        capture(chunk.toString());
        logs += chunk.toString();
        const started = logs.split('\n').find((l) => l.includes('"server.started"'));
        if (started) resolve(Number((JSON.parse(started) as { grpc: string }).grpc.split(':').pop()));
      });
      child.on('exit', (code) => reject(new Error(`sepp serve exited with ${code}: ${logs}`)));
    });
    return { child, port, logs: () => logs };
  }

  const job = (n: number) =>
    testJob('smoke', { type: 'ping', payload: Buffer.from(`{"n":${n}}`), contentType: 'application/json' });
  let backedUpJobId = '';

  test('serve: enqueue, reserve and ack through the client; backup; SIGTERM exits 0', async () => {
    const server = await serve(join(work, 'data'));
    const client = new QueueServiceClient(`127.0.0.1:${server.port}`, credentials.createInsecure());
    try {
      const first = await call(client, client.enqueue, { job: job(1) });
      const second = await call(client, client.enqueue, { job: job(2) });
      backedUpJobId = second.jobId;
      const { jobs } = await call(client, client.reserve, {
        maxResponseBytes: 0,
        queues: ['smoke'],
        maxJobs: 1,
        leaseDurationMs: 0,
        waitTimeoutMs: 1000,
        workerId: '',
      });
      assert.equal(jobs[0]?.jobId, first.jobId);
      await call(client, client.ack, { jobId: first.jobId, attempt: 1 });
      const backup = await new Promise<SpawnSyncReturns<string>>((resolve) => {
        const child = spawn(exe, ['backup', join(work, 'copy.db'), '--server', `127.0.0.1:${server.port}`], {
          cwd: join(work, 'home'),
          env: { PATH: '/usr/bin:/bin', TMPDIR: tmp },
        });
        let stderr = '';
        child.stderr.on('data', (c: Buffer) => {
          stderr += c.toString();
        });
        child.on('exit', (status) => resolve({ status, stderr, stdout: '' } as SpawnSyncReturns<string>));
      });
      assert.equal(backup.status, 0, backup.stderr);
      assert.match(backup.stderr, /backup written to/);
    } finally {
      client.close();
    }
    const exited = new Promise<number | null>((resolve) => server.child.on('exit', (code) => resolve(code)));
    server.child.kill('SIGTERM');
    assert.equal(await exited, 0, server.logs());
  });

  test('a server started on the backup serves the same jobs', async () => {
    const restored = join(work, 'restored');
    mkdirSync(restored);
    copyFileSync(join(work, 'copy.db'), join(restored, 'sepp.db'));
    const server = await serve(restored);
    const client = new QueueServiceClient(`127.0.0.1:${server.port}`, credentials.createInsecure());
    try {
      const { jobs } = await call(client, client.reserve, {
        maxResponseBytes: 0,
        queues: ['smoke'],
        maxJobs: 10,
        leaseDurationMs: 0,
        waitTimeoutMs: 0,
        workerId: '',
      });
      assert.deepEqual(
        jobs.map((j) => j.jobId),
        [backedUpJobId],
      );
    } finally {
      client.close();
      server.child.kill('SIGTERM');
    }
  });

  const traceSkip = ['strace', 'systemd-analyze'].filter((c) => !commandExists(c));
  test('every system call selftest makes is allowed by the systemd unit', {
    skip: traceSkip.length > 0 && `not installed: ${traceSkip.join(', ')}`,
  }, () => {
    // As root the trace runs as `nobody`, which must reach the binary and its TMPDIR.
    chmodSync(work, 0o755);
    chmodSync(tmp, 0o1777);
    const filter = readUnitDirectives().get('SystemCallFilter') ?? [];
    const allowed = allowedSyscalls(filter);
    const traced = tracedSyscalls(exe, ['selftest'], {
      cwd: tmp,
      env: { PATH: '/usr/bin:/bin', TMPDIR: tmp },
      traceFile: join(work, 'strace.txt'),
    });
    assert.equal(traced.status, 0, traced.output);
    assert.ok(traced.syscalls.size > 20, `strace recorded only ${[...traced.syscalls].join(', ')}`);
    const denied = [...traced.syscalls].filter((call) => !allowed.has(call)).sort();
    assert.deepEqual(denied, [], `SystemCallFilter=${filter.join(' | ')} denies calls sepp makes`);
  });

  // The OTLP exporters load node:http with import(), which a single executable cannot do
  // unless the bundle turns it into require() (build.mjs): only the real binary shows it.
  test('serve: /metrics answers, spans reach an OTLP/HTTP collector, SIGTERM flushes and exits 0', async () => {
    const receiver = await startOtlpReceiver();
    const server = spawn(
      exe,
      [
        'serve',
        '--data-dir',
        join(work, 'data'),
        '--grpc-listen',
        '127.0.0.1:0',
        '--admin-listen',
        '127.0.0.1:0',
        '--log-format',
        'json',
      ],
      {
        cwd: join(work, 'home'),
        env: { PATH: '/usr/bin:/bin', TMPDIR: tmp, SEPP_OTLP_ENDPOINT: receiver.endpoint },
      },
    );
    let stderr = '';
    server.stderr.setEncoding('utf8');
    const capture = captureOutput('process');
    const exited = new Promise<number | null>((resolve) => server.on('exit', (code) => resolve(code)));
    try {
      const started = await new Promise<{ grpc: string; metrics: string }>((resolve, reject) => {
        server.stderr.on('data', (chunk: string) => {
          capture(chunk);
          stderr += chunk;
          for (const line of stderr.split('\n')) {
            if (line.includes('"server.started"'))
              resolve(JSON.parse(line) as { grpc: string; metrics: string });
          }
        });
        void exited.then((code) => reject(new Error(`sepp exited with ${code}:\n${stderr}`)));
      });
      const client = new QueueServiceClient(started.grpc, credentials.createInsecure());
      const { jobId } = await call(client, client.enqueue, {
        job: testJob('smoke'),
      });
      client.close();
      const metrics = await (await fetch(`http://${started.metrics}`)).text();
      assert.match(metrics, /^sepp_jobs_enqueued_total\{sepp_queue="smoke",otel_scope_name="sepp"\} 1$/m);
      server.kill('SIGTERM');
      assert.equal(await exited, 0, stderr);
      assert.doesNotMatch(stderr, /otel\.export_problem|telemetry\.flush_failed/);
      const enqueue = receiver.spans.find((span) => span.name === 'sepp.v1.QueueService/Enqueue');
      assert.equal(enqueue?.attributes['sepp.job.id'], jobId);
    } finally {
      server.kill('SIGKILL');
      await receiver.close();
    }
  });
});

/** `node build.mjs --out-dir DIR`: the same build as `npm run build`, without touching dist/. */
function buildInto(outDir: string): string {
  const build = spawnSync(process.execPath, [join(root, 'build.mjs'), '--out-dir', outDir], {
    cwd: root,
    encoding: 'utf8',
    timeout: 150_000,
  });
  assert.equal(build.status, 0, `build failed:\n${build.stdout}${build.stderr}`);
  return join(outDir, 'sepp');
}
