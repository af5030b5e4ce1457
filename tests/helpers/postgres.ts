/**
 * A throwaway PostgreSQL 15 cluster for tests and benchmarks (issue 37), started by the
 * code itself from Debian's `postgresql-15` binaries: `initdb` in a fresh temporary
 * directory, `postgres` on 127.0.0.1 on a free port, as an unprivileged user (Debian's
 * `postgres` system user when this process is root, since PostgreSQL refuses to run as
 * root; the current user otherwise), with password authentication (SCRAM, a generated
 * password) and the durability settings of `postgresSettings`, the one place where every
 * cluster's settings are named (bench/ prints them with each PostgreSQL peer's row).
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
import { randomBytes } from 'node:crypto';
import {
  appendFileSync,
  chmodSync,
  chownSync,
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { freePort } from '../../bench/lib/net.ts';
import { descendants, readStat } from '../../bench/lib/proc-stats.ts';
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
  /** Where the cluster's temporary directory is made; default the system's temp dir. */
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

/** Starts a fresh cluster and resolves once it accepts connections. */
export async function startPostgres(options: PostgresOptions = {}): Promise<PostgresCluster> {
  startsProcess('a PostgreSQL cluster');
  const binDir = options.binDir ?? postgresBinDir;
  requireBinaries(binDir);
  const user = serverUser();
  const readyTimeoutMs = options.readyTimeoutMs ?? 60_000;
  const root = mkdtempSync(join(options.parentDir ?? tmpdir(), 'sepp-pg-'));
  let child: ChildProcess | undefined;
  let closed = false;
  const abandon = () => {
    if (child?.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      killTree(child.pid);
    }
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
    // The password reaches initdb through a file only the server's user can read, removed after.
    const initPasswordFile = join(serverHome, 'initdb-password');
    writeFileSync(initPasswordFile, `${password}\n`, { mode: 0o600 });
    if (user.uid !== process.getuid?.()) chownSync(initPasswordFile, user.uid, user.gid);
    const passwordFile = join(root, 'password');
    writeFileSync(passwordFile, password, { mode: 0o600 });
    chmodSync(passwordFile, 0o600);
    // Only what a server needs: no PG* variable of the caller's may change the cluster.
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: serverHome,
      LC_ALL: 'C',
    };
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
    } else
      runAs(
        user,
        join(binDir, 'initdb'),
        [
          '--pgdata',
          dataDir,
          '--username',
          postgresRole,
          '--pwfile',
          initPasswordFile,
          '--auth',
          'scram-sha-256',
          '--encoding',
          'UTF8',
          '--locale',
          'C',
          // initdb's own fsync of the new files; the server's fsync setting is postgresSettings'.
          '--no-sync',
        ],
        env,
      );
    rmSync(initPasswordFile);
    const port = await freePort();
    const logFile = join(root, 'postgres.log');
    const versionRun = spawnSync(join(binDir, 'postgres'), ['--version'], { encoding: 'utf8' });
    const binaryVersion = versionRun.stdout.trim();

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
        const client = new pg.Client(connection());
        client.on('error', () => {});
        try {
          await client.connect();
          await client.query('SELECT 1');
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
      process.kill(postmaster, signal);
      // A fast shutdown that hangs (a stuck disk) still ends; the next start recovers.
      const timer = setTimeout(() => killTree(postmaster), 30_000);
      await gone;
      clearTimeout(timer);
      await waitUntilGone(pids, 10_000);
    };

    const kill9 = async (): Promise<void> => {
      const proc = child;
      if (proc?.pid === undefined || !running()) return;
      const gone = exited(proc);
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
    const version = versions.rows[0]?.version ?? binaryVersion;
    const serverVersion = versions.rows[0]?.server_version ?? binaryVersion;
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

function tail(file: string, lines = 20): string {
  if (!existsSync(file)) return '(no server log)';
  return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
}
