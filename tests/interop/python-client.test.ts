/**
 * The Python client package (clients/python) as its users get it, with
 * Debian's /usr/bin/python3 and packages only (.ci/run installs them; a
 * machine without them fails here, naming what to install):
 * - its pytest suite against real servers it starts on port 0, and mypy;
 * - docs/python.md: each code block is its example's marked region, and every
 *   command runs as written in a fresh virtual environment outside the
 *   repository: install, then the documented producer and worker;
 * - across languages: the Python producer's jobs run in the TypeScript SDK's
 *   Worker, and the TypeScript SDK's jobs in the Python worker;
 * - TLS.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { SeppClient, type WorkerJob } from '@sepp-queue/client';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { runBundle } from '../helpers/test-run.ts';
import { selfSignedCertificate } from '../helpers/tls.ts';

const python = '/usr/bin/python3';
const root = join(import.meta.dirname, '..', '..');
const packageDir = join(root, 'clients', 'python');
const execFileAsync = promisify(execFile);
const read = (path: string) => readFileSync(join(root, path), 'utf8');

/** Runs a command; on failure the assertion shows its output. */
async function run(
  file: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<{ stdout: string; stderr: string }> {
  try {
    return await execFileAsync(file, args, {
      cwd: options.cwd ?? root,
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1', ...options.env },
      timeout: options.timeoutMs ?? 120_000,
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    assert.fail(`${file} ${args.join(' ')} failed: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`);
  }
}

before(async () => {
  const modules = [
    'grpc',
    'grpc_tools',
    'google.protobuf',
    'pytest',
    'mypy',
    'ensurepip',
    'setuptools',
    'wheel',
  ];
  // Found, not imported: importing grpc_tools, mypy and pytest cost 0.4 s of CPU, and the tests
  // that use a module show its import error anyway.
  const probe = [
    'import importlib.util, sys',
    `missing = [m for m in ${JSON.stringify(modules)} if importlib.util.find_spec(m) is None]`,
    'sys.exit(f"missing: {missing}" if missing else 0)',
  ].join('\n');
  await run(python, ['-c', probe]).catch((error: Error) => {
    throw new Error(
      `${python} lacks a module the Python client needs (apt-get install python3-grpcio python3-grpc-tools ` +
        `python3-protobuf python3-pytest python3-mypy python3-venv python3-setuptools python3-wheel): ${error.message}`,
    );
  });
});

/** The code block after `<!-- name -->` in docs/python.md. */
function block(name: string): string {
  const docs = read('docs/python.md');
  const match = new RegExp(`<!-- ${name} -->\\n\`\`\`\\w+\\n([\\s\\S]*?)\`\`\``).exec(docs);
  assert.ok(match?.[1] !== undefined, `docs/python.md has no block marked ${name}`);
  return match[1];
}

function region(path: string): string {
  const match = /# region quickstart\n([\s\S]*?)# endregion quickstart/.exec(read(path));
  assert.ok(match?.[1] !== undefined, `${path} has no quickstart region`);
  return match[1];
}

const lines = (text: string) => text.split('\n').filter((line) => line.trim() !== '');

describe('docs/python.md', () => {
  test('the producer and the worker are their examples, in at most ten lines of code each', () => {
    for (const path of ['examples/python/producer.py', 'examples/python/worker.py']) {
      const code = block(`${path}#quickstart`);
      assert.equal(code, region(path), `docs/python.md's copy of ${path} is out of date`);
      assert.ok(lines(code).length <= 10, `${path} has ${lines(code).length} lines of code`);
    }
  });

  test('the Debian packages it names are installable here', async () => {
    const [command] = lines(block('python.md#apt'));
    const packages = command?.replace(/^sudo apt-get install /, '').split(' ') ?? [];
    assert.ok(packages.length >= 5 && packages.every((p) => /^python3-[a-z]+$/.test(p)), command);
    // Each is installed here (dpkg says so, in a few ms), or apt must know it: asked only for
    // those not installed, simulated, so nothing changes (apt-get loads its whole package cache:
    // 1.3 s of CPU even when every package is installed).
    const format = `\${Package} \${db:Status-Abbrev}\n`; // dpkg-query's fields, not JavaScript's.
    const status = await execFileAsync('dpkg-query', ['-W', '-f', format, ...packages])
      .then(({ stdout }) => stdout)
      .catch((error: { stdout?: string }) => error.stdout ?? ''); // Exit 1 when one is unknown to dpkg.
    const toInstall = packages.filter((name) => !new RegExp(`^${name} ii `, 'm').test(status));
    if (toInstall.length === 0) return;
    const { stdout } = await run('apt-get', ['install', '--simulate', ...toInstall]);
    for (const name of toInstall) {
      assert.match(stdout, new RegExp(`^(${name} is already the newest version|Inst ${name} )`, 'm'));
    }
  });

  describe('as a user: a fresh venv outside the repository, the documented producer and worker', () => {
    let t: TestServer;
    let user: string;
    let env: NodeJS.ProcessEnv;
    let ts: SeppClient;
    before(async () => {
      t = await startTestServer();
      ts = SeppClient.connect(t.address);
      user = mkdtempSync(join(tmpdir(), 'sepp-py-user-'));
      // A checkout's clients/python, without what a build may have left in the repository.
      cpSync(packageDir, join(user, 'clients', 'python'), {
        recursive: true,
        filter: (src) => !/(^|\/)(build|__pycache__|\.pytest_cache|\.mypy_cache|[^/]*\.egg-info)$/.test(src),
      });
      writeFileSync(join(user, 'producer.py'), block('examples/python/producer.py#quickstart'));
      writeFileSync(join(user, 'worker.py'), block('examples/python/worker.py#quickstart'));
      // The README's first job runs the example itself, from the checkout's layout.
      cpSync(join(root, 'examples', 'python'), join(user, 'examples', 'python'), { recursive: true });
      env = { SEPP_SERVER: t.address, PATH: process.env.PATH };
      for (const command of lines(block('python.md#install'))) {
        await run('bash', ['-c', command], { cwd: user, env, timeoutMs: 300_000 });
      }
    });
    after(async () => {
      await ts.close();
      await t.dispose();
      rmSync(user, { recursive: true, force: true });
    });

    const [workerCommand, producerCommand] = lines(block('python.md#run'));
    const produce = async () => {
      assert.equal(producerCommand, '.venv/bin/python producer.py');
      const { stdout } = await run('bash', ['-c', producerCommand ?? ''], { cwd: user, env });
      const match = /^enqueued (\S+) for ada@example\.com\nenqueued (\S+) for grace@example\.com\n$/.exec(
        stdout,
      );
      assert.ok(match, stdout);
      return [match[1], match[2]];
    };

    test('the installed package is the one imported, not the repository', async () => {
      const { stdout } = await run('.venv/bin/python', ['-c', 'import sepp; print(sepp.__file__)'], {
        cwd: user,
        env,
      });
      assert.ok(stdout.startsWith(join(user, '.venv')), stdout);
    });

    test('the Python producer enqueues; the TypeScript SDK worker runs its jobs', async () => {
      const ids = await produce();
      const seen: { id: string; to: unknown; contentType: string }[] = [];
      let done!: () => void;
      const finished = new Promise<void>((resolve) => {
        done = resolve;
      });
      const worker = ts.worker({
        queues: ['emails'],
        handlers: {
          send: (job: WorkerJob<{ to: string }>) => {
            seen.push({ id: job.id, to: job.data.to, contentType: job.contentType });
            if (seen.length === 2) done();
          },
        },
      });
      await finished;
      await worker.close();
      assert.deepEqual(seen, [
        { id: ids[0], to: 'ada@example.com', contentType: 'application/json' },
        { id: ids[1], to: 'grace@example.com', contentType: 'application/json' },
      ]);
    });

    test('the Python worker runs the TypeScript SDK’s and the Python producer’s jobs, and exits 0 on Ctrl-C', async () => {
      assert.equal(workerCommand, '.venv/bin/python worker.py');
      const worker: ChildProcess = spawn('bash', ['-c', `exec ${workerCommand}`], { cwd: user, env });
      let out = '';
      let err = '';
      const waiters: { text: string; resolve: () => void }[] = [];
      worker.stdout?.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        for (const w of waiters) if (out.includes(w.text)) w.resolve();
      });
      worker.stderr?.on('data', (chunk: Buffer) => {
        err += chunk.toString();
      });
      const exited = new Promise<number | null>((resolve) => worker.on('exit', resolve));
      const printed = (text: string) =>
        new Promise<void>((resolve) => {
          if (out.includes(text)) resolve();
          else waiters.push({ text, resolve });
        });
      try {
        await ts.enqueueJson('emails', 'send', { to: 'typescript@example.com' });
        await printed('sending to typescript@example.com\n');
        await produce();
        await Promise.all([
          printed('sending to ada@example.com\n'),
          printed('sending to grace@example.com\n'),
        ]);
        const emails = (await ts.listQueues()).find((q) => q.name === 'emails');
        assert.equal(emails?.counts.ready, 0);
      } finally {
        worker.kill('SIGINT');
      }
      assert.equal(await exited, 0, `the worker exits 0 after Ctrl-C; its stderr:\n${err}`);
      assert.doesNotMatch(err, /Traceback/);
      assert.equal(lines(out).length, 3, out);
    });

    test("the README's Python worker line runs a job, and exits 0 on Ctrl-C", async () => {
      const readmeLine = read('README.md')
        .split('\n')
        .find((line) => /^ {4}\.venv\/bin\/python /.test(line))
        ?.trim();
      assert.equal(readmeLine, '.venv/bin/python examples/python/worker.py');
      const worker: ChildProcess = spawn('bash', ['-c', `exec ${readmeLine}`], { cwd: user, env });
      let out = '';
      let err = '';
      const printed = new Promise<void>((resolve) => {
        worker.stdout?.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          if (out.includes('sending to readme@example.com\n')) resolve();
        });
      });
      worker.stderr?.on('data', (chunk: Buffer) => {
        err += chunk.toString();
      });
      const exited = new Promise<number | null>((resolve) => worker.on('exit', resolve));
      try {
        await ts.enqueueJson('emails', 'send', { to: 'readme@example.com' });
        await printed;
      } finally {
        worker.kill('SIGINT');
      }
      assert.equal(await exited, 0, `the worker exits 0 after Ctrl-C; its stderr:\n${err}`);
    });
  });
});

describe('Python client over TLS', () => {
  let t: TestServer;
  let dir: string;
  let caFile: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sepp-py-tls-'));
    const cert = selfSignedCertificate(dir);
    caFile = cert.certFile;
    t = await startTestServer({
      toml: cert.toml('grpc'),
      tls: { certPem: cert.certPem, caPem: cert.certPem },
    });
  });
  after(async () => {
    await t.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  test('trusts the CA it is given and checks the server name', async () => {
    const script = [
      'import sys, sepp',
      'ca = open(sys.argv[2], "rb").read()',
      'for name in (None, "localhost"):',
      '    with sepp.Client(sys.argv[1], tls=sepp.TlsOptions(ca=ca, server_name=name)) as client:',
      '        print(client.enqueue("tls", "t", "x").id)',
      'with sepp.Client(sys.argv[1], tls=sepp.TlsOptions(ca=ca, server_name="elsewhere"), default_deadline_ms=3000) as client:',
      '    try:',
      '        client.enqueue("tls", "t", "x")',
      '    except sepp.UnavailableError as error:',
      '        print("refused:", error.code)',
    ].join('\n');
    const { stdout } = await run(python, ['-c', script, t.address, caFile], {
      env: { PYTHONPATH: join(packageDir, 'src') },
    });
    assert.match(stdout, /^[0-9a-f-]{36}\n[0-9a-f-]{36}\nrefused: unavailable\n$/);
  });
});

/**
 * The pytest suite's files in shards run side by side, each a pytest process with its own
 * session server: the suite mostly waits on real time (leases that lapse, backoffs, server
 * restarts: about 110 s of test time for 15 s of CPU), so three shards of about equal time
 * take about a third of the wall. The files named go to the first shards (the longest, by
 * `pytest --durations=0`: about 40 s each, 2026-12-07); every other file goes to the last one
 * (about 35 s), so a new file runs without being listed here.
 */
const pytestShards = [
  ['tests/test_worker_lifecycle.py', 'tests/test_outcomes.py'],
  ['tests/test_worker.py', 'tests/test_timeout.py', 'tests/test_keepalive.py'],
];

/** The pytest shards' files; the last shard is every file not named in `pytestShards`. */
function shardFiles(): string[][] {
  const all = readdirSync(join(packageDir, 'tests'))
    .filter((name) => /^test_.*\.py$/.test(name))
    .map((name) => `tests/${name}`)
    .sort();
  const listed = pytestShards.flat();
  assert.deepEqual(
    listed.filter((f) => !all.includes(f)),
    [],
    'pytestShards names files that do not exist',
  );
  return [...pytestShards, all.filter((f) => !listed.includes(f))];
}

/**
 * The pytest suite and mypy start with the file and run while the docs' fresh venv is made
 * and used (they share nothing: the suite imports the package from src/ and starts its own
 * servers), so the file takes about the longer of the two instead of their sum; the tests
 * of `clients/python` at its end await them.
 */
let pytestRuns: Promise<{ files: string[]; stdout: string }[]>;
let mypyRun: Promise<{ stdout: string }>;
before(() => {
  // The servers are the run's bundle when there is one (clients/python/tests/conftest.py).
  const serverCommand =
    runBundle === undefined ? {} : { SEPP_SERVER_COMMAND: JSON.stringify([process.execPath, runBundle]) };
  pytestRuns = Promise.all(
    shardFiles().map(async (files) => {
      const { stdout } = await run(python, ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', ...files], {
        cwd: packageDir,
        env: serverCommand,
        timeoutMs: 600_000,
      });
      return { files, stdout };
    }),
  );
  // mypy's incremental cache, kept between runs outside the source tree: a cold run (a fresh
  // clone, as in CI) takes 4 s of CPU (8 s before pytest's typed sources gave way to
  // clients/python/mypy-stubs), a warm one 0.3 s; the cache only skips modules that did not change.
  // The pytest shards' time-out: a cold run under heavy load took over the default 2 minutes.
  const cache = join(root, 'node_modules', '.cache', 'sepp-tests', 'mypy');
  mypyRun = run(python, ['-m', 'mypy', '--cache-dir', cache], { cwd: packageDir, timeoutMs: 600_000 });
  // Awaited by their tests; until then a failure is theirs to report, not an unhandled rejection.
  pytestRuns.catch(() => {});
  mypyRun.catch(() => {});
});

describe('clients/python', () => {
  test('its pytest suite passes against real servers', async () => {
    for (const { files, stdout } of await pytestRuns) {
      assert.match(stdout, /\b\d+ passed\b/, `shard ${files.join(' ')}`);
      assert.doesNotMatch(stdout, /\b(failed|skipped|error)\b/, stdout);
    }
  });

  test('mypy --strict finds nothing', async () => {
    const { stdout } = await mypyRun;
    assert.match(stdout, /^Success: no issues found/m);
  });
});
