/**
 * The README's opening, run as printed. `npm ci` is the one exception: CI runs it
 * (.ci/run), and a test cannot, since it would replace node_modules under every
 * other test.
 * - The two commands are exactly `npm ci && npm start` and `npm ci && npm test`, and
 *   .ci/run runs exactly that test command after the script that installs the tests'
 *   Debian packages, which `npm test` runs first too.
 * - The first job: `npm start` on its defaults — except ports 0 and a temporary data
 *   directory, through SEPP_GRPC_LISTEN, SEPP_ADMIN_LISTEN and SEPP_DATA_DIR, since
 *   tests never take fixed ports — then each command of the README's first-job section
 *   through the shell, with SEPP_SERVER naming that server: the TypeScript worker prints
 *   `sending to ada@example.com`; the admin UI answers at its address. The Python
 *   worker's line runs in tests/interop/python-client.test.ts, in the venv it installs.
 * - Each code block is the marked region of its example (TypeScript, and Python's
 *   worker) or docs/python.md's install block, which tests/interop/python-client.test.ts
 *   runs as written.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { captureOutput } from '../helpers/secret-log.ts';
import { run, userEnv } from '../helpers/user-commands.ts';

const root = new URL('../..', import.meta.url).pathname;
const read = (path: string) => readFileSync(join(root, path), 'utf8');
const readme = read('README.md');

/** The README's section under `## title`, up to the next `## `. */
function section(title: string): string {
  const text = readme.split(`\n## ${title}\n`)[1];
  assert.ok(text !== undefined, `README.md has no section "${title}"`);
  return text.split('\n## ')[0] ?? '';
}

/** The indented command lines (four spaces) of a README section, outside its fenced blocks. */
function commandLines(text: string): string[] {
  let fenced = false;
  return text
    .split('\n')
    .filter((line) => {
      if (line.startsWith('```')) fenced = !fenced;
      return !fenced && /^ {4}\S/.test(line);
    })
    .map((line) => line.trim());
}

/** The fenced block after `<!-- marker -->` in `markdown`. */
function markedBlock(markdown: string, marker: string): string {
  const match = new RegExp(`<!-- ${marker} -->\\n\`\`\`\\w*\\n([\\s\\S]*?)\`\`\``).exec(markdown);
  assert.ok(match?.[1] !== undefined, `no block marked ${marker}`);
  return match[1];
}

/** The fenced block of a language in a README section (the first one). */
function fencedBlock(text: string, language: string): string {
  const match = new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``).exec(text);
  assert.ok(match?.[1] !== undefined, `no ${language} block`);
  return match[1];
}

describe('the README opens with two commands', () => {
  test('one starts the server, one passes the tests, and CI runs exactly the second', () => {
    assert.deepEqual(commandLines(section('Two commands')), ['npm ci && npm start', 'npm ci && npm test']);
    const ci = read('.ci/run')
      .split('\n')
      .filter((line) => line.trim() !== '' && !line.startsWith('#'));
    assert.deepEqual(ci.slice(-2), ['scripts/test-deps.sh', 'npm ci && npm test']);
    const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
    assert.match(
      scripts.test ?? '',
      /^sh scripts\/test-deps\.sh && /,
      'npm test installs what the tests need first',
    );
    // Both tiers and the checks in one run (one queue), each tier also a script of its own.
    assert.match(scripts.test ?? '', /node scripts\/run-tests\.mjs --tier fast --tier system --checks$/);
    assert.match(scripts['test:fast'] ?? '', /node scripts\/run-tests\.mjs --tier fast --checks$/);
    assert.match(scripts['test:system'] ?? '', /node scripts\/run-tests\.mjs --tier system$/);
  });
});

describe("the README's first job, run as printed", { timeout: 300_000 }, () => {
  let server: ChildProcess | undefined;
  let dataDir = '';
  let logs = '';
  let grpc = '';
  let adminUrl = '';
  const capture = captureOutput('process');

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'sepp-readme-'));
    // `npm start`, as the README's first command runs it after `npm ci`.
    server = spawn('npm', ['start'], {
      cwd: root,
      env: userEnv({
        SEPP_CONFIG: '',
        SEPP_DATA_DIR: dataDir,
        SEPP_GRPC_LISTEN: '127.0.0.1:0',
        SEPP_ADMIN_LISTEN: '127.0.0.1:0',
        SEPP_LOG_FORMAT: 'json',
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const started = await new Promise<{ grpc: string; admin: string }>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        capture(chunk.toString());
        logs += chunk.toString();
        const line = logs.split('\n').find((l) => l.includes('"server.started"'));
        if (line !== undefined) resolve(JSON.parse(line) as { grpc: string; admin: string });
      };
      server?.stdout?.on('data', onData);
      server?.stderr?.on('data', onData);
      server?.on('exit', (code) =>
        reject(new Error(`npm start exited with ${code} before listening:\n${logs}`)),
      );
    });
    grpc = started.grpc;
    adminUrl = started.admin;
  });

  after(async () => {
    if (server?.exitCode === null) {
      const exited = new Promise((resolve) => server?.on('exit', resolve));
      server.kill('SIGTERM');
      await exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  const [enqueue, worker, pythonWorker, ...rest] = commandLines(section('A first job'));

  /** The README's enqueue line, through the shell. */
  async function enqueueAda(): Promise<void> {
    assert.equal(enqueue, `npx sepp enqueue emails send --json '{"to":"ada@example.com"}'`);
    const enqueued = await run('sh', ['-c', enqueue ?? ''], root, userEnv({ SEPP_SERVER: grpc }));
    assert.equal(enqueued.code, 0, enqueued.stderr);
    captureOutput('cli')(`${enqueued.stdout}\n${enqueued.stderr}\n`);
  }

  /**
   * Runs a worker command until it prints that it sends to ada, then gives it Ctrl-C:
   * SIGINT to its process group, as a terminal sends it (npx, tsx and node each get one).
   */
  async function runUntilAda(command: string, cwd: string): Promise<void> {
    const child = spawn('sh', ['-c', `exec ${command}`], {
      cwd,
      env: userEnv({ SEPP_SERVER: grpc }),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let output = '';
    const printed = new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('sending to ada@example.com\n')) resolve();
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      child.on('exit', (code) =>
        reject(new Error(`${command} exited (${code}) before running the job:\n${output}`)),
      );
    });
    const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
    try {
      await printed;
    } finally {
      if (child.exitCode === null && child.pid !== undefined) process.kill(-child.pid, 'SIGINT');
      await exited;
    }
  }

  test('the CLI enqueues the job and the TypeScript worker runs it', async () => {
    assert.deepEqual(rest, []);
    assert.equal(worker, 'npx tsx examples/first-job.ts');
    await enqueueAda();
    await runUntilAda(worker ?? '', root);
  });

  test("the Python worker's line is the one tests/interop/python-client.test.ts runs", () => {
    // That test installs the package as the README's install block says (the same as
    // docs/python.md's, below) and runs this line in its venv.
    assert.equal(pythonWorker, '.venv/bin/python examples/python/worker.py');
  });

  test('the admin UI answers at its address', async () => {
    const response = await fetch(`${adminUrl}/`);
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
  });
});

describe("the README's code is its examples' and docs/python.md's", () => {
  test('the TypeScript worker is examples/first-job.ts, in ten lines of code', () => {
    const code = fencedBlock(section('A first job'), 'ts');
    const example = /\/\/ #region readme\n([\s\S]*?)\/\/ #endregion readme/.exec(
      read('examples/first-job.ts'),
    )?.[1];
    assert.equal(code, example, "the README's copy of examples/first-job.ts is out of date");
    assert.ok(code.split('\n').filter((l) => l.trim() !== '').length <= 10, code);
  });

  test("the Python install and worker are docs/python.md's, which the interop test runs", () => {
    const text = section('A first job');
    const python = read('docs/python.md');
    assert.equal(markedBlock(text, 'python.md#install'), markedBlock(python, 'python.md#install'));
    assert.equal(
      markedBlock(text, 'examples/python/worker.py#quickstart'),
      markedBlock(python, 'examples/python/worker.py#quickstart'),
    );
  });
});
