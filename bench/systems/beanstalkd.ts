import fivebeans from 'fivebeans';
import { commandOutput, packageVersion } from '../lib/versions.ts';
import { choice } from './settings.ts';
import type {
  ClientRole,
  DriverSettings,
  Lease,
  LeaseBatch,
  QueueClient,
  ServerProcess,
  StartContext,
  SystemDriver,
} from './types.ts';

/**
 * beanstalkd from Debian with a binlog (`-b DIR`) and `-f 0`: fsync the binlog after every
 * write before replying. Client: `fivebeans`; a job is put, then reserve + delete.
 *
 * beanstalkd's protocol has no batch commands and a connection serves one blocking reserve
 * at a time, so W3 writes its commands back to back on one connection (pipelining) and
 * every worker has its own connection.
 *
 * Settings (`--set beanstalkd.<key>=<value>`):
 *   producers   per-client (default) | shared — one connection per producer, or all
 *               producers of a tube pipelining on one connection.
 */

type Conn = InstanceType<typeof fivebeans.client>;

/** Adapts a fivebeans callback call to a promise; the error word becomes an Error's message. */
function call<T extends unknown[]>(
  run: (cb: (err: string | Error | null, ...results: T) => void) => void,
): Promise<T> {
  return new Promise((resolve, reject) => {
    run((err, ...results) => {
      if (err === null) resolve(results);
      else reject(err instanceof Error ? err : new Error(err));
    });
  });
}

async function connect(port: number): Promise<Conn> {
  const conn = new fivebeans.client('127.0.0.1', port);
  await new Promise<void>((resolve, reject) => {
    conn.once('connect', () => resolve());
    conn.once('error', reject);
    conn.connect();
  });
  return conn;
}

const ttrSeconds = 60;

/** Reserves with a timeout; null on TIMED_OUT (and on DEADLINE_SOON, which asks to retry). */
async function reserveOne(conn: Conn, timeoutSeconds: number): Promise<string | null> {
  try {
    const [id] = await call<[string, Buffer]>((cb) => conn.reserve_with_timeout(timeoutSeconds, cb));
    return id;
  } catch (err) {
    if (err instanceof Error && (err.message === 'TIMED_OUT' || err.message === 'DEADLINE_SOON')) return null;
    throw err;
  }
}

class BeanstalkClient implements QueueClient {
  constructor(
    private readonly conn: Conn,
    private readonly ownsConn: boolean,
  ) {}

  async enqueue(payload: Buffer): Promise<void> {
    await call<[string]>((cb) => this.conn.put(0, 0, ttrSeconds, payload, cb));
  }

  async enqueueBatch(payloads: readonly Buffer[]): Promise<void> {
    await Promise.all(payloads.map((p) => call<[string]>((cb) => this.conn.put(0, 0, ttrSeconds, p, cb))));
  }

  async reserve(waitMs: number): Promise<Lease | null> {
    const id = await reserveOne(this.conn, Math.ceil(waitMs / 1000));
    if (id === null) return null;
    return { ack: async () => void (await call<[]>((cb) => this.conn.destroy(id, cb))) };
  }

  async reserveBatch(max: number, waitMs: number): Promise<LeaseBatch | null> {
    // `reserve-with-timeout 0` returns at once, so `max` of them pipeline without blocking.
    const got = await Promise.all(Array.from({ length: max }, () => reserveOne(this.conn, 0)));
    let ids = got.filter((id): id is string => id !== null);
    if (ids.length === 0) {
      const id = await reserveOne(this.conn, Math.ceil(waitMs / 1000));
      ids = id === null ? [] : [id];
    }
    if (ids.length === 0) return null;
    return {
      count: ids.length,
      ack: async () => void (await Promise.all(ids.map((id) => call<[]>((cb) => this.conn.destroy(id, cb))))),
    };
  }

  async close(): Promise<void> {
    if (this.ownsConn) this.conn.end();
  }
}

export function beanstalkdDriver(settings: DriverSettings): SystemDriver {
  const producers = choice(settings, 'beanstalkd.producers', ['per-client', 'shared'], 'per-client');
  let server: ServerProcess | undefined;
  let port = 0;
  let version = '';
  const sharedProducers = new Map<string, Conn>();

  return {
    id: 'beanstalkd',
    get label() {
      return `beanstalkd ${version}`;
    },
    durability: 'fsync before ack (-f 0)',
    batch: { enqueue: 'pipelined', reserve: 'pipelined', ack: 'pipelined' },

    async start(ctx: StartContext) {
      version = commandOutput('beanstalkd', ['-v']).replace('beanstalkd ', '');
      port = await ctx.freePort();
      server = await ctx.spawn({
        name: 'beanstalkd',
        command: 'beanstalkd',
        args: ['-b', ctx.dataDir, '-f', '0', '-l', '127.0.0.1', '-p', String(port)],
      });
      await ctx.waitForPort(port, 10_000);
    },

    async stop() {
      for (const conn of sharedProducers.values()) conn.end();
      sharedProducers.clear();
      await server?.stop();
      server = undefined;
    },

    serverPids: () => (server === undefined ? [] : [server.pid]),

    async createQueue(_name: string) {
      // Tubes exist while someone uses or watches them.
    },

    async openClient(tube: string, role: ClientRole) {
      if (role === 'producer' && producers === 'shared') {
        let conn = sharedProducers.get(tube);
        if (conn === undefined) {
          conn = await connect(port);
          sharedProducers.set(tube, conn);
          await call((cb) => conn!.use(tube, cb));
        }
        return new BeanstalkClient(conn, false);
      }
      const conn = await connect(port);
      await call((cb) => conn.use(tube, cb));
      if (role !== 'producer') {
        await call((cb) => conn.watch(tube, cb));
        await call((cb) => conn.ignore('default', cb));
      }
      return new BeanstalkClient(conn, true);
    },

    describeSettings() {
      return (
        `beanstalkd ${version} -b DIR -f 0 -l 127.0.0.1; fivebeans ${packageVersion('fivebeans')}; ` +
        `producer connections=${producers}, one connection per worker; W3 batches pipelined`
      );
    },
  };
}
