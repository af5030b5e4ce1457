/**
 * A throwaway PostgreSQL 15 cluster for tests and benchmarks (issue 37), started by the
 * code itself from Debian's `postgresql-15` binaries: a copy of the test run's one `initdb`
 * (`template`) in a fresh temporary directory (`defaultParentDir`), `postgres` on 127.0.0.1
 * on a free port, as an unprivileged user (Debian's `postgres` system user when this process
 * is root, since PostgreSQL refuses to run as root; the current user otherwise), with password authentication (SCRAM, a generated
 * password) and the durability settings of `postgresSettings`, the one place where every
 * cluster's settings are named (bench/ prints them with each PostgreSQL peer's row).
 *
 * A test file takes one cluster for all its tests with `useCluster(prefix)` (started before
 * them, closed after them, a database of its own in it).
 *
 * Lifecycle of a cluster: `startPostgres()` → running; `stop()` (fast shutdown) or
 * `kill9()` (SIGKILL to the postmaster and every backend at once: the crash of the whole
 * server) → stopped, data kept; `restart()` → running again on the same data directory and
 * port; `close()` → stopped (an immediate shutdown: no checkpoint for files about to go) and
 * every file removed. A cluster still running when this
 * process exits (a failed test, Ctrl-C in the bench) is killed and its directory removed
 * by an exit hook.
 *
 * `kill9()` and the exit hook reach the backends too (found by parentage), and "no process
 * is left" is checked over the postmaster and everything it had started.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  appendFileSync,
  chmodSync,
  chownSync,
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statfsSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { freePort } from '../../bench/lib/net.ts';
import { cpuMicros, descendants, readStat } from '../../bench/lib/proc-stats.ts';
import { processAlive } from '../../src/platform/private-dir.ts';
import type { PostgresStoreOptions } from '../../src/store/postgres/postgres-store.ts';
import { captureOutput, registerSecret } from './secret-log.ts';
import { startsProcess } from './test-run.ts';

/** Where Debian's `postgresql-15` package puts the server binaries. */
export const postgresBinDir = '/usr/lib/postgresql/15/bin';

/**
 * The server settings of every cluster this module starts, tests and benchmark alike, so
 * that each system measured on PostgreSQL runs on the same server. Durability is
 * PostgreSQL's default and is spelled out: a commit returns after its WAL is fsynced.
 * Everything not named here is initdb's default (shared_buffers 128MB, max_wal_size 1GB,
 * autovacuum on). `max_connections` is raised from 100 because a benchmark's 50 producers
 * and 50 workers may each hold a connection besides a peer's own maintenance connections.
 */
export const postgresSettings: Readonly<Record<string, string>> = Object.freeze({
  fsync: 'on',
  synchronous_commit: 'on',
  full_page_writes: 'on',
  wal_sync_method: 'fdatasync',
  max_connections: '200',
  // Dynamic shared memory in files of the data directory (pg_dynshmem), not in /dev/shm: a
  // cluster stopped at once (SIGQUIT, close()) or killed leaves its segments behind, and in
  // /dev/shm they outlived the cluster's directory — ~16 a run, 716 (375 MB of memory) on
  // this machine by 2026-12-06. Parallel query, their main user, plays no part here.
  dynamic_shared_memory_type: 'mmap',
});

/** `fsync=on synchronous_commit=on …`, for reports. */
export function describePostgresSettings(): string {
  return Object.entries(postgresSettings)
    .map(([name, value]) => `${name}=${value}`)
    .join(' ');
}

/** The role every cluster is created with (its superuser). */
export const postgresRole = 'sepp';

export interface PostgresOptions {
  /** Directory holding `initdb` and `postgres`; default Debian's PostgreSQL 15. */
  readonly binDir?: string;
  /** Where the cluster's temporary directory is made; default `defaultParentDir()`'s. */
  readonly parentDir?: string;
  /** How long to wait for the server to accept connections; default 60 s. */
  readonly readyTimeoutMs?: number;
  /**
   * Let this process exit while the cluster runs (its exit hook then removes it): for a
   * cluster shared by a whole test file that no test closes (test-store.ts).
   */
  readonly unref?: boolean;
  /** Server settings besides `postgresSettings` (a test's own: `synchronous_standby_names`). */
  readonly settings?: Readonly<Record<string, string>>;
  /**
   * A streaming-replication standby of this running cluster instead of a new one: its data
   * directory is `pg_basebackup`'s copy, it connects to the primary as `applicationName`
   * (the name `synchronous_standby_names` gives), and it shares the primary's password.
   */
  readonly standbyOf?: PostgresCluster;
  readonly applicationName?: string;
}

export interface PostgresCluster {
  readonly host: '127.0.0.1';
  readonly port: number;
  readonly user: string;
  /** The generated password (also registered as a secret for the test run's log check). */
  readonly password: string;
  /** A file holding only the password (mode 0600, owned by this process's user). */
  readonly passwordFile: string;
  /** The cluster's data directory (PGDATA). */
  readonly dataDir: string;
  /** The server's own version string, e.g. `PostgreSQL 15.14 (Debian 15.14-0+deb12u1) …`. */
  readonly version: string;
  /** `server_version`, e.g. `15.14 (Debian 15.14-0+deb12u1)`. */
  readonly serverVersion: string;
  /** The operating-system user the server runs as. */
  readonly osUser: string;
  /** The postmaster's PID while it runs, else undefined. */
  pid(): number | undefined;
  /** The postmaster and every process it started (backends, background workers), while it runs. */
  processes(): number[];
  /** A connection URL with the password in it; `database` defaults to `postgres`. */
  url(database?: string): string;
  /** A connection URL without a password (the password comes from `passwordFile`). */
  urlWithoutPassword(database?: string): string;
  /** Connection settings for a `pg` Client or Pool. */
  connection(database?: string): pg.ClientConfig;
  /** A sepp PostgresStore's options on `database` and `schema`: 3 connections, 30 s statements. */
  storeOptions(database: string, schema: string): PostgresStoreOptions;
  /** Creates a fresh database named `<prefix>_<n>` and returns its name. */
  createDatabase(prefix?: string): Promise<string>;
  /** Runs one statement as the superuser on database `postgres` (or `database`). */
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    sql: string,
    params?: readonly unknown[],
    database?: string,
  ): Promise<pg.QueryResult<R>>;
  /** Fast shutdown (SIGINT): clients are disconnected, the server checkpoints and exits. */
  stop(): Promise<void>;
  /** SIGKILL to the postmaster and all its backends; resolves once none of them runs. */
  kill9(): Promise<void>;
  /** Starts the server again on the same data directory and port (stopping it first if it runs). */
  restart(): Promise<void>;
  /** A standby: `pg_ctl promote`, and resolves once it accepts writes. */
  promote(): Promise<void>;
  /** Stops the server if it runs and removes every file of the cluster. */
  close(): Promise<void>;
  /** The server's log so far. */
  logs(): string;
}

interface OsUser {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
}

/** The user the server runs as: `postgres` when we are root, ourselves otherwise. */
function serverUser(): OsUser {
  const uid = process.getuid?.() ?? -1;
  const gid = process.getgid?.() ?? -1;
  if (uid !== 0) return { name: String(uid), uid, gid };
  const entry = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .map((line) => line.split(':'))
    .find((fields) => fields[0] === 'postgres');
  if (entry === undefined) {
    throw new Error(
      'PostgreSQL cannot run as root and the `postgres` system user is missing: install the Debian package postgresql-15 (it creates that user)',
    );
  }
  return { name: 'postgres', uid: Number(entry[2]), gid: Number(entry[3]) };
}

function requireBinaries(binDir: string): void {
  for (const name of ['initdb', 'postgres']) {
    if (!existsSync(join(binDir, name))) {
      throw new Error(
        `PostgreSQL 15 is not installed (${join(binDir, name)} is missing): apt-get install postgresql-15`,
      );
    }
  }
}

/**
 * As root, the server's user must be able to reach its directory: every ancestor has to be
 * searchable by others (a TMPDIR under /root is not).
 */
function requireReachable(dir: string, user: OsUser): void {
  if (process.getuid?.() !== 0) return;
  for (let d = dirname(dir); ; d = dirname(d)) {
    const st = statSync(d);
    const searchable = (st.mode & 0o001) !== 0 || (st.uid === user.uid && (st.mode & 0o100) !== 0);
    if (!searchable) {
      throw new Error(
        `the ${user.name} user cannot reach ${dir} (${d} is not searchable by others): ` +
          'give startPostgres a parentDir under /tmp',
      );
    }
    if (d === dirname(d)) return;
  }
}

/** `pid` and every process it started that is still there (backends, background workers). */
export function processTree(pid: number): number[] {
  return [pid, ...descendants([pid])];
}

/** The PIDs of `pids` that still run (a zombie, exited but not yet reaped, does not). */
export function livingProcesses(pids: readonly number[]): number[] {
  return pids.filter((pid) => {
    const stat = readStat(pid);
    return stat !== undefined && stat.state !== 'Z';
  });
}

async function waitUntilGone(pids: readonly number[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (livingProcesses(pids).length > 0) {
    if (Date.now() > deadline) {
      throw new Error(`PostgreSQL processes ${livingProcesses(pids).join(', ')} still run`);
    }
    await sleep(20);
  }
}

/**
 * SIGKILL to the postmaster and every process it started. PostgreSQL's children lead
 * process groups of their own, so they are found by parentage; the postmaster is stopped
 * first so that it cannot start another while they are listed. Returns the PIDs killed.
 */
function killTree(postmaster: number): number[] {
  try {
    process.kill(postmaster, 'SIGSTOP');
  } catch {
    return [];
  }
  const pids = processTree(postmaster);
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  return pids;
}

/** Clusters still running or not yet removed, for the exit hook. */
const open = new Map<string, () => void>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Synchronous: a process that is exiting cannot wait for a fast shutdown.
  process.once('exit', () => {
    for (const abandon of open.values()) abandon();
  });
}

/**
 * What the clusters of this process cost, for measuring the tests: with SEPP_TEST_POSTGRES_CPU_LOG
 * set to a file, each cluster appends one JSON line when it closes — how it was made, the CPU
 * of initdb (or pg_basebackup), and the server's CPU (the postmaster and every backend, live or
 * reaped) summed over its starts. The servers are no child the test runner counts.
 */
const cpuLog = process.env.SEPP_TEST_POSTGRES_CPU_LOG || undefined;

/** This process's children already waited for, in ms of CPU (a synchronous child's is the difference). */
function reapedChildCpuMs(): number {
  return ((readStat(process.pid)?.reapedChildTicks ?? 0) * 1000) / 100;
}

/** Runs a binary as the server's user, synchronously; throws with its output on failure. */
function runAs(user: OsUser, command: string, args: readonly string[], env: NodeJS.ProcessEnv): void {
  const result = spawnSync(command, [...args], {
    uid: user.uid,
    gid: user.gid,
    env,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (result.status !== 0) {
    const output = `${result.stdout ?? ''}${result.stderr ?? ''}`.trim();
    throw new Error(`${command} failed (${result.error?.message ?? `exit ${result.status}`}): ${output}`);
  }
}

function isRetryableConnectError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = 'code' in err ? err.code : undefined;
  // Refused while the postmaster binds; 57P03 while it recovers or starts up.
  return code === 'ECONNREFUSED' || code === 'ECONNRESET' || code === '57P03';
}

/** initdb's arguments but where and the password file: the same for every cluster. */
const initdbArgs = [
  '--username',
  postgresRole,
  '--auth',
  'scram-sha-256',
  '--encoding',
  'UTF8',
  '--locale',
  'C',
  // initdb's own fsync of the new files; the server's fsync setting is postgresSettings'.
  '--no-sync',
];

/** A stopped, never started cluster that new ones are copied from, and its superuser's password. */
interface Template {
  readonly dataDir: string;
  readonly password: string;
}

const templates = new Map<string, Template>();

/**
 * The data directory every new cluster of this test run starts as a copy of: initdb ran once
 * for the run, into `sepp-pg-template-<runner's pid>-<hash of the binaries and initdb's
 * arguments>` in the temporary directory, shared by the run's processes (a file or group's
 * parent is the runner). initdb cost ~0.7–1 s of CPU a cluster, a copy ~0.2 s; a run starts
 * ~15 clusters. Made under a private name and renamed into place, so two processes making it
 * at once both end with one whole template; the templates of runs whose runner is gone are
 * removed by the next one made.
 */
function template(binDir: string, user: OsUser, parentDir: string, env: NodeJS.ProcessEnv): Template {
  const version = binaryVersion(binDir);
  const key = createHash('sha256')
    .update(JSON.stringify([binDir, version, initdbArgs, user.uid]))
    .digest('hex')
    .slice(0, 12);
  const prefix = 'sepp-pg-template-';
  const dir = join(parentDir, `${prefix}${process.ppid}-${key}`);
  const known = templates.get(dir);
  if (known !== undefined) return known;
  const read = (): Template | undefined =>
    existsSync(join(dir, 'password'))
      ? { dataDir: join(dir, 'data'), password: readFileSync(join(dir, 'password'), 'utf8') }
      : undefined;
  let made = read();
  if (made === undefined) {
    for (const name of readdirSync(parentDir)) {
      const runner = Number(/^sepp-pg-template-(\d+)-/.exec(name)?.[1]);
      if (Number.isInteger(runner) && runner !== process.ppid && !processAlive(runner)) {
        rmSync(join(parentDir, name), { recursive: true, force: true });
      }
    }
    const making = mkdtempSync(join(parentDir, 'sepp-pg-making-'));
    try {
      if (user.uid !== process.getuid?.()) chownSync(making, user.uid, user.gid);
      const password = randomBytes(18).toString('base64url');
      const passwordFile = join(making, 'password');
      writeFileSync(passwordFile, password, { mode: 0o600 });
      if (user.uid !== process.getuid?.()) chownSync(passwordFile, user.uid, user.gid);
      runAs(
        user,
        join(binDir, 'initdb'),
        ['--pgdata', join(making, 'data'), '--pwfile', passwordFile, ...initdbArgs],
        env,
      );
      try {
        renameSync(making, dir);
      } catch {
        // Another process of the run made it meanwhile: theirs is used.
      }
    } finally {
      rmSync(making, { recursive: true, force: true });
    }
    made = read();
    if (made === undefined) throw new Error(`the template cluster ${dir} was not made`);
  }
  templates.set(dir, made);
  return made;
}

const binaryVersions = new Map<string, string>();

/** `postgres --version` of the binaries in `binDir`, asked once per process. */
function binaryVersion(binDir: string): string {
  let version = binaryVersions.get(binDir);
  if (version === undefined) {
    version = spawnSync(join(binDir, 'postgres'), ['--version'], { encoding: 'utf8' }).stdout.trim();
    binaryVersions.set(binDir, version);
  }
  return version;
}

/** Free space /dev/shm must have to hold a run's clusters (a few at once, each up to ~1 GB of WAL). */
const shmFreeBytesNeeded = 4 * 1024 ** 3;

/**
 * Where clusters are made unless `parentDir` says: SEPP_TEST_POSTGRES_DIR; in a test run (the
 * runner names the tier) a memory file system when there is one with room (4 GiB free), as the
 * conformance suite's SQLite files; else the system's temp dir, on disk, as a benchmark needs.
 * The tests check what the server does, not the disk: `fsync` stays on (every commit still
 * asks for its WAL to be synced, which tmpfs answers at once), and a kill -9 of the server
 * keeps the page cache. On disk, the WAL fsyncs under load and the removal of each cluster's
 * WAL files (a mount with `discard`: 5.8 s of the servers file's ~90 s at load 8-12) were
 * wall time no test was about.
 */
function defaultParentDir(): string {
  const asked = process.env.SEPP_TEST_POSTGRES_DIR;
  if (asked !== undefined && asked !== '') return asked;
  if (
    process.env.SEPP_TEST_TIER !== undefined &&
    existsSync('/dev/shm') &&
    statSync('/dev/shm').isDirectory()
  ) {
    // A container's /dev/shm may be 64 MB: a cluster is ~40 MB before its WAL grows.
    const free = statfsSync('/dev/shm');
    if (free.bavail * free.bsize >= shmFreeBytesNeeded) return '/dev/shm';
  }
  return tmpdir();
}

/** Starts a fresh cluster and resolves once it accepts connections. */
export async function startPostgres(options: PostgresOptions = {}): Promise<PostgresCluster> {
  startsProcess('a PostgreSQL cluster');
  const binDir = options.binDir ?? postgresBinDir;
  requireBinaries(binDir);
  const user = serverUser();
  const readyTimeoutMs = options.readyTimeoutMs ?? 60_000;
  const parentDir = options.parentDir ?? defaultParentDir();
  const root = mkdtempSync(join(parentDir, 'sepp-pg-'));
  let child: ChildProcess | undefined;
  let closed = false;
  /** What this cluster cost (SEPP_TEST_POSTGRES_CPU_LOG). */
  const cost = {
    made: options.standbyOf === undefined ? 'copy' : 'pg_basebackup',
    makeCpuMs: 0,
    serverCpuMs: 0,
    starts: 0,
  };
  const logCost = () => {
    if (cpuLog === undefined) return;
    const file = process.argv.find((arg) => arg.endsWith('.test.ts') || arg.endsWith('.mjs')) ?? '';
    appendFileSync(
      cpuLog,
      `${JSON.stringify({ file, ...cost, serverCpuMs: Math.round(cost.serverCpuMs) })}\n`,
    );
  };
  const abandon = () => {
    if (child?.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      if (cpuLog !== undefined) cost.serverCpuMs += cpuMicros([child.pid]) / 1000;
      killTree(child.pid);
    }
    logCost();
    rmSync(root, { recursive: true, force: true });
  };
  installExitHook();
  open.set(root, abandon);
  try {
    requireReachable(root, user);
    const dataDir = join(root, 'data');
    const serverHome = join(root, 'home');
    mkdirSync(serverHome);
    if (user.uid !== process.getuid?.()) {
      chownSync(root, user.uid, user.gid);
      chownSync(serverHome, user.uid, user.gid);
    }
    const primary = options.standbyOf;
    const password = primary?.password ?? randomBytes(18).toString('base64url');
    registerSecret('postgres password', password);
    const passwordFile = join(root, 'password');
    writeFileSync(passwordFile, password, { mode: 0o600 });
    chmodSync(passwordFile, 0o600);
    // Only what a server needs: no PG* variable of the caller's may change the cluster.
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: serverHome,
      LC_ALL: 'C',
    };
    const makeStart = reapedChildCpuMs();
    /** The superuser's password until the first start sets the cluster's own (a copy has the template's). */
    let loginPassword = password;
    if (primary !== undefined) {
      // The copy, then the standby's own name in its connection to the primary.
      runAs(
        user,
        join(binDir, 'pg_basebackup'),
        [
          '-h',
          primary.host,
          '-p',
          String(primary.port),
          '-U',
          primary.user,
          '-D',
          dataDir,
          '-R',
          '-X',
          'stream',
          '--no-sync',
          '--checkpoint=fast',
        ],
        { ...env, PGPASSWORD: password },
      );
      const conninfo = `host=${primary.host} port=${primary.port} user=${primary.user} password=${password} application_name=${options.applicationName ?? 'standby'}`;
      appendFileSync(join(dataDir, 'postgresql.auto.conf'), `primary_conninfo = '${conninfo}'\n`);
    } else {
      // A copy of the run's template (cp -a keeps the owner and modes), then a password of its own.
      const from = template(binDir, user, parentDir, env);
      registerSecret('postgres template password', from.password);
      const copy = spawnSync('cp', ['-a', from.dataDir, dataDir], { encoding: 'utf8' });
      if (copy.status !== 0) throw new Error(`cp -a ${from.dataDir} failed: ${copy.stderr}`);
      loginPassword = from.password;
    }
    cost.makeCpuMs = reapedChildCpuMs() - makeStart;
    const port = await freePort();
    const logFile = join(root, 'postgres.log');

    const connection = (database = 'postgres'): pg.ClientConfig => ({
      host: '127.0.0.1',
      port,
      user: postgresRole,
      password,
      database,
    });

    const launch = async (): Promise<void> => {
      const fd = openSync(logFile, 'a');
      const settings = Object.entries({ ...postgresSettings, ...options.settings }).flatMap(
        ([name, value]) => ['-c', `${name}=${value}`],
      );
      const started = spawn(
        join(binDir, 'postgres'),
        [
          '-D',
          dataDir,
          '-p',
          String(port),
          '-c',
          'listen_addresses=127.0.0.1',
          '-c',
          'unix_socket_directories=',
          ...settings,
        ],
        { uid: user.uid, gid: user.gid, env, stdio: ['ignore', fd, fd], detached: true },
      );
      closeSync(fd);
      cost.starts++;
      if (options.unref === true) started.unref();
      await new Promise<void>((resolve, reject) => {
        started.once('spawn', () => resolve());
        started.once('error', (err) => reject(new Error(`cannot start postgres: ${err.message}`)));
      });
      child = started;
      const deadline = Date.now() + readyTimeoutMs;
      for (;;) {
        if (started.exitCode !== null || started.signalCode !== null) {
          throw new Error(`postgres exited while starting:\n${tail(logFile)}`);
        }
        const client = new pg.Client({ ...connection(), password: loginPassword });
        client.on('error', () => {});
        try {
          await client.connect();
          if (loginPassword !== password) {
            // base64url: nothing to quote. The server stores its SCRAM verifier, not the text.
            await client.query(`ALTER ROLE ${postgresRole} PASSWORD '${password}'`);
            loginPassword = password;
          } else await client.query('SELECT 1');
          return;
        } catch (err) {
          if (!isRetryableConnectError(err) || Date.now() > deadline) {
            throw new Error(
              `postgres did not accept connections on 127.0.0.1:${port}: ${err instanceof Error ? err.message : String(err)}\n${tail(logFile)}`,
            );
          }
        } finally {
          await client.end().catch(() => {});
        }
        await sleep(50);
      }
    };

    const running = () => child !== undefined && child.exitCode === null && child.signalCode === null;

    const exited = (proc: ChildProcess): Promise<void> =>
      proc.exitCode !== null || proc.signalCode !== null
        ? Promise.resolve()
        : new Promise((resolve) => proc.once('exit', () => resolve()));

    /** SIGINT: a fast shutdown (with its checkpoint); SIGQUIT: an immediate one, for a cluster about to be removed. */
    const stop = async (signal: 'SIGINT' | 'SIGQUIT' = 'SIGINT'): Promise<void> => {
      const proc = child;
      if (proc?.pid === undefined || !running()) return;
      const postmaster = proc.pid;
      const pids = processTree(postmaster);
      const gone = exited(proc);
      // Reaped, the postmaster's CPU holds its backends' (they exit before it, waited for).
      const reapedBefore = reapedChildCpuMs();
      process.kill(postmaster, signal);
      // A fast shutdown that hangs (a stuck disk) still ends; the next start recovers.
      const timer = setTimeout(() => killTree(postmaster), 30_000);
      await gone;
      clearTimeout(timer);
      cost.serverCpuMs += reapedChildCpuMs() - reapedBefore;
      await waitUntilGone(pids, 10_000);
    };

    const kill9 = async (): Promise<void> => {
      const proc = child;
      if (proc?.pid === undefined || !running()) return;
      const gone = exited(proc);
      if (cpuLog !== undefined) cost.serverCpuMs += cpuMicros([proc.pid]) / 1000;
      const pids = killTree(proc.pid);
      await gone;
      // The next start refuses to run while an old backend still holds the shared memory.
      await waitUntilGone(pids, 10_000);
    };

    const query = async <R extends pg.QueryResultRow>(
      sql: string,
      params: readonly unknown[] = [],
      database?: string,
    ): Promise<pg.QueryResult<R>> => {
      const client = new pg.Client(connection(database));
      client.on('error', () => {});
      await client.connect();
      try {
        return await client.query<R>(sql, [...params]);
      } finally {
        await client.end();
      }
    };

    await launch();
    const versions = await query<{ version: string; server_version: string }>(
      "SELECT version(), current_setting('server_version') AS server_version",
    );
    const version = versions.rows[0]?.version ?? binaryVersion(binDir);
    const serverVersion = versions.rows[0]?.server_version ?? binaryVersion(binDir);
    let databases = 0;
    const url = (database = 'postgres', withPassword = true) =>
      `postgres://${postgresRole}${withPassword ? `:${password}` : ''}@127.0.0.1:${port}/${database}`;

    return {
      host: '127.0.0.1',
      port,
      user: postgresRole,
      password,
      passwordFile,
      dataDir,
      version,
      serverVersion,
      osUser: user.name,
      pid: () => (running() ? child?.pid : undefined),
      processes: () => (running() && child?.pid !== undefined ? processTree(child.pid) : []),
      url: (database) => url(database),
      urlWithoutPassword: (database) => url(database, false),
      connection,
      storeOptions: (database, schema) => ({
        url: url(database, false),
        password,
        schema,
        poolSize: 3,
        statementTimeoutMs: 30_000,
      }),
      async createDatabase(prefix = 'test') {
        if (!/^[a-z][a-z0-9_]{0,40}$/.test(prefix)) {
          throw new Error(`database prefix "${prefix}": use lower-case letters, digits and _`);
        }
        const name = `${prefix}_${++databases}`;
        await query(`CREATE DATABASE ${name}`);
        return name;
      },
      query,
      stop,
      kill9,
      async restart() {
        await stop();
        await launch();
      },
      async promote() {
        runAs(user, join(binDir, 'pg_ctl'), ['promote', '-w', '-D', dataDir], env);
        for (let i = 0; ; i++) {
          const { rows } = await query<{ ro: string }>(
            "SELECT current_setting('transaction_read_only') AS ro",
          );
          if (rows[0]?.ro === 'off') return;
          if (i > 600) throw new Error('the promoted standby still refuses writes');
          await sleep(20);
        }
      },
      async close() {
        if (closed) return;
        closed = true;
        try {
          // Its files go next, so no shutdown checkpoint: a fast shutdown wrote every dirty
          // page first, which kept the model test's process 29 s after its last test at load ~20.
          await stop('SIGQUIT');
        } finally {
          // The test run's log check reads the server's log too (tests/helpers/secret-log.ts).
          if (existsSync(logFile)) captureOutput('postgres')(readFileSync(logFile, 'utf8'));
          logCost();
          open.delete(root);
          rmSync(root, { recursive: true, force: true });
        }
      },
      logs: () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''),
    };
  } catch (err) {
    abandon();
    open.delete(root);
    throw err;
  }
}

/** A test file's cluster and database (`useCluster`), there once the file's `before` hooks ran. */
export interface FileCluster {
  /** The running cluster; throws when the file's `before` hook has not started it (or failed). */
  readonly cluster: PostgresCluster;
  /** The file's database in it, `<prefix>_1`. */
  readonly database: string;
  /**
   * A sepp config's `[store]` table on `schema` of the file's database, the password read from
   * `passwordFile` (default the cluster's own file).
   */
  storeToml(schema: string, passwordFile?: string): string;
  /**
   * The superuser's client on the file's database: connected at the first call, the same one
   * after, ended in the file's `after` before the cluster closes (whose immediate shutdown
   * would fail a client still connected).
   */
  client(): Promise<pg.Client>;
}

/**
 * One cluster for the whole test file and a database in it, named `<databasePrefix>_1`:
 * started in a `before` hook and closed in an `after` hook, both node:test's at the file's top
 * level (call it there). The tests wait for it; another top-level `before` hook of the file
 * does not (node 20 runs them at once), so what the file's tests share on the cluster is made
 * at first use (`client()`). The tests make what they need in the database, usually a schema
 * each.
 */
export function useCluster(databasePrefix: string, options: PostgresOptions = {}): FileCluster {
  let started: { cluster: PostgresCluster; database?: string } | undefined;
  let client: Promise<pg.Client> | undefined;
  before(async () => {
    const cluster = await startPostgres(options);
    started = { cluster };
    started.database = await cluster.createDatabase(databasePrefix);
  });
  after(async () => {
    try {
      await client?.then(
        (c) => c.end(),
        () => {},
      );
    } finally {
      await started?.cluster.close();
    }
  });
  const ready = () => {
    if (started?.database === undefined) {
      throw new Error(`the PostgreSQL cluster of this file (database ${databasePrefix}) did not start`);
    }
    return { cluster: started.cluster, database: started.database };
  };
  return {
    get cluster() {
      return ready().cluster;
    },
    get database() {
      return ready().database;
    },
    storeToml(schema, passwordFile) {
      const { cluster, database } = ready();
      return `[store]\nkind = "postgres"\nurl = "${cluster.urlWithoutPassword(database)}"\npassword_file = "${passwordFile ?? cluster.passwordFile}"\nschema = "${schema}"\n`;
    },
    client() {
      client ??= (async () => {
        const { cluster, database } = ready();
        const c = new pg.Client(cluster.connection(database));
        await c.connect();
        return c;
      })();
      return client;
    },
  };
}

function tail(file: string, lines = 20): string {
  if (!existsSync(file)) return '(no server log)';
  return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
}
