/**
 * `sepp` from a checkout, as docs/development.md shows it: `npm start` (the server, or any command
 * after `--`) and `npx sepp …`. npm itself is run, as a user runs it:
 * - `npm start --silent -- queues --json` prints only the command's JSON on stdout;
 * - `kill -TERM` of `npm start` stops the server (npm forwards the signal; the server must
 *   be the process that gets it, not a shell that dies of it and orphans the server);
 * - Ctrl-C (SIGINT to the whole process group: npm and the server each get one, and npm
 *   forwards its copy) is one graceful stop, not "a second signal forces the exit".
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { captureOutput } from '../helpers/secret-log.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { run, userEnv } from '../helpers/user-commands.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
/** Hang guard only: `npm start` compiles the sources with tsx, slow on a loaded machine. */
const deadlineMs = 120_000;

/** Every descendant of `pid` (from /proc), so none is left behind whatever the test finds. */
function descendants(pid: number): number[] {
  const children = (p: number): number[] => {
    const tasks = `/proc/${p}/task`;
    if (!existsSync(tasks)) return [];
    return readdirSync(tasks).flatMap((task) => {
      try {
        return readFileSync(`${tasks}/${task}/children`, 'utf8')
          .trim()
          .split(/\s+/)
          .filter(Boolean)
          .map(Number);
      } catch {
        return [];
      }
    });
  };
  const found: number[] = [];
  for (let queue = children(pid); queue.length > 0; ) {
    const next = queue.shift()!;
    found.push(next);
    queue = queue.concat(children(next));
  }
  return found;
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** True when nothing accepts connections on 127.0.0.1:port. */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

interface NpmStart {
  npm: ChildProcess;
  /** The server's gRPC port, once it listens. */
  port: Promise<number>;
  exited: Promise<number | null>;
  /** Once every process holding npm's output pipes has exited and the output is all read. */
  closed: Promise<void>;
  logs(): string;
  /** Processes under npm, recorded once the server listens. */
  serverPids: number[];
}

/** `npm start -- serve …` on a fresh data directory and ports 0, in its own process group. */
function npmStart(dataDir: string): NpmStart {
  const npm = spawn(
    'npm',
    [
      'start',
      '--silent',
      '--',
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
      cwd: root,
      env: { ...process.env, SEPP_CONFIG: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    },
  );
  let logs = '';
  const capture = captureOutput('process');
  const started: NpmStart = {
    npm,
    logs: () => logs,
    serverPids: [],
    exited: new Promise((resolve) => npm.on('exit', (code) => resolve(code))),
    closed: new Promise((resolve) => npm.on('close', () => resolve())),
    port: new Promise((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        capture(chunk.toString());
        logs += chunk.toString();
        const line = logs.split('\n').find((l) => l.includes('"server.started"'));
        if (line !== undefined) {
          started.serverPids.push(...descendants(npm.pid!));
          resolve(Number((JSON.parse(line) as { grpc: string }).grpc.split(':').pop()));
        }
      };
      npm.stdout?.on('data', onData);
      npm.stderr?.on('data', onData);
      npm.on('exit', (code) => reject(new Error(`npm start exited with ${code} before listening:\n${logs}`)));
    }),
  };
  started.port.catch(() => {});
  return started;
}

/**
 * Waits for npm to exit, then asserts that nothing it started outlives it (npm waits for
 * its child, so the server must be gone too; 10 s of grace as a hang guard), and reads
 * the output to its end.
 */
async function outlivedBy(started: NpmStart): Promise<void> {
  await started.exited;
  for (const pid of started.serverPids) {
    for (let i = 0; alive(pid) && i < 100; i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(alive(pid), false, `process ${pid} under npm start outlived it:\n${started.logs()}`);
  }
  await started.closed;
}

describe('from a checkout', { timeout: 4 * deadlineMs }, () => {
  let t: TestServer;
  let work = '';
  const leftovers: number[] = [];
  before(async () => {
    t = await startTestServer();
    work = mkdtempSync(join(tmpdir(), 'sepp-checkout-'));
  });
  after(async () => {
    for (const pid of leftovers) if (alive(pid)) process.kill(pid, 'SIGKILL');
    rmSync(work, { recursive: true, force: true });
    await t.dispose();
  });

  test('npm start --silent -- queues --json prints nothing but the JSON', async () => {
    const result = await run(
      'npm',
      ['start', '--silent', '--', 'queues', '--json', '--server', t.address],
      root,
      userEnv(),
    );
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(JSON.parse(result.stdout), [], `stdout is not only JSON:\n${result.stdout}`);
  });

  test('npx sepp queues runs the checkout’s sepp', async () => {
    // --offline: the registry's package named sepp is someone else's, and must never be fetched.
    const result = await run(
      'npx',
      ['--offline', 'sepp', 'queues'],
      root,
      userEnv({ SEPP_SERVER: t.address }),
    );
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, 'no queues yet (a queue appears with its first job)\n');
  });

  test('kill -TERM of npm start stops the server', async () => {
    const started = npmStart(join(work, 'term'));
    const port = await started.port;
    leftovers.push(...started.serverPids);
    assert.ok(started.serverPids.length > 0, 'the server runs under npm');
    started.npm.kill('SIGTERM');
    await outlivedBy(started);
    assert.equal(await refused(port), true, 'the gRPC port is closed');
    assert.match(started.logs(), /"server\.stopped"/);
  });

  test('Ctrl-C of npm start (SIGINT to its process group) stops the server gracefully', async () => {
    const started = npmStart(join(work, 'int'));
    const port = await started.port;
    leftovers.push(...started.serverPids);
    process.kill(-started.npm.pid!, 'SIGINT');
    await outlivedBy(started);
    assert.equal(await refused(port), true, 'the gRPC port is closed');
    assert.match(started.logs(), /"server\.stopped"/);
    assert.doesNotMatch(started.logs(), /forced_exit/, 'one Ctrl-C is not two');
  });
});
