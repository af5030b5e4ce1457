import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  AckPolicy,
  type Consumer,
  connect,
  ErrorCode,
  type JetStreamClient,
  type JsMsg,
  type NatsConnection,
  NatsError,
  nanos,
  RetentionPolicy,
  StorageType,
} from 'nats';
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
 * NATS JetStream as a job queue: one work-queue stream per queue (a message is removed
 * once acknowledged) with one durable pull consumer shared by all workers. Enqueue is a
 * JetStream publish awaiting its PubAck; reserve is a pull request for one message; ack is
 * `ackAck`, which waits for the server to confirm the ack.
 *
 * Two builds:
 *   nats210  Debian 13's nats-server 2.10 (fetched by bench/peers/install-peers.sh) with
 *            `jetstream { sync_interval: always }`: the store is fsynced on every write.
 *   nats29   Debian 12's nats-server 2.9 with its default, which fsyncs only every
 *            2 minutes: NOT durable per message. 2.9 has no option to fsync each message.
 *
 * Settings (`--set nats.<key>=<value>`, applies to both builds):
 *   connection   shared (default) | per-client — one connection for every client, or one each.
 *   reserve      pull (default) | next — the older `js.pull()`, one plain request per
 *                message (deprecated in nats.js 2.x but cheaper: no per-call iterator,
 *                heartbeats or timers), or `consumer.next()` of the current API. In
 *                interleaved runs pull used 10-30% less client CPU per drained job.
 */

type Build = '2.10' | '2.9';

const consumerName = 'workers';

/** Where each build's binary is: 2.10 unpacked into .peers/ by install-peers.sh. */
export function natsServerPath(build: Build): string {
  return build === '2.10'
    ? fileURLToPath(new URL('../../.peers/nats-server-2.10/usr/sbin/nats-server', import.meta.url))
    : '/usr/sbin/nats-server';
}

/** nats.js requires a pull to wait at least 1 s. */
const expiresMs = (waitMs: number) => Math.max(1000, Math.ceil(waitMs));

/** A pull that found no message: 404/408 statuses, or the request's own timeout. */
const emptyPullCodes: readonly string[] = [
  ErrorCode.JetStream404NoMessages,
  ErrorCode.JetStream408RequestTimeout,
  ErrorCode.Timeout,
];
function isEmptyPull(err: unknown): boolean {
  return err instanceof NatsError && emptyPullCodes.includes(err.code);
}

class NatsClient implements QueueClient {
  constructor(
    private readonly nc: NatsConnection,
    private readonly ownsConnection: boolean,
    private readonly js: JetStreamClient,
    private readonly subject: string,
    private readonly consumer: Consumer | undefined,
    private readonly reserveWith: 'next' | 'pull',
  ) {}

  private needConsumer(): Consumer {
    if (this.consumer === undefined) throw new Error('nats client opened without the worker role');
    return this.consumer;
  }

  async enqueue(payload: Buffer): Promise<void> {
    await this.js.publish(this.subject, payload);
  }

  async enqueueBatch(payloads: readonly Buffer[]): Promise<void> {
    // JetStream has no batch publish (before 2.12): the publishes are pipelined.
    await Promise.all(payloads.map((p) => this.js.publish(this.subject, p)));
  }

  private async pullOne(waitMs: number): Promise<JsMsg | null> {
    try {
      return await this.js.pull(this.subject, consumerName, expiresMs(waitMs));
    } catch (err) {
      if (isEmptyPull(err)) return null;
      throw err;
    }
  }

  async reserve(waitMs: number): Promise<Lease | null> {
    const msg =
      this.reserveWith === 'pull'
        ? await this.pullOne(waitMs)
        : await this.needConsumer().next({ expires: expiresMs(waitMs) });
    if (msg === null) return null;
    return { ack: async () => void (await msg.ackAck()) };
  }

  async reserveBatch(max: number, waitMs: number): Promise<LeaseBatch | null> {
    const msgs: JsMsg[] = [];
    const iter = await this.needConsumer().fetch({ max_messages: max, expires: expiresMs(waitMs) });
    for await (const m of iter) msgs.push(m);
    if (msgs.length === 0) return null;
    return {
      count: msgs.length,
      // Acks are per message; they are pipelined and each awaits the server's confirmation.
      ack: async () => void (await Promise.all(msgs.map((m) => m.ackAck()))),
    };
  }

  async close(): Promise<void> {
    if (this.ownsConnection) await this.nc.close();
  }
}

export function natsDriver(build: Build, settings: DriverSettings): SystemDriver {
  const connectionMode = choice(settings, 'nats.connection', ['shared', 'per-client'], 'shared');
  const reserveWith = choice(settings, 'nats.reserve', ['pull', 'next'], 'pull');
  const syncAlways = build === '2.10';
  let server: ServerProcess | undefined;
  let port = 0;
  let version = '';
  let shared: NatsConnection | undefined;

  const open = () => connect({ servers: `127.0.0.1:${port}` });

  return {
    id: build === '2.10' ? 'nats210' : 'nats29',
    get label() {
      return syncAlways ? `NATS ${version} JetStream (sync always)` : `NATS ${version} JetStream (NO fsync)`;
    },
    durability: syncAlways
      ? 'fsync before ack (sync_interval: always)'
      : 'no per-message fsync (2.9 default: sync every 2 min)',
    batch: { enqueue: 'pipelined', reserve: 'native', ack: 'pipelined' },

    async start(ctx: StartContext) {
      const binary = natsServerPath(build);
      version = commandOutput(binary, ['--version']).replace('nats-server: ', '');
      port = await ctx.freePort();
      const config = join(ctx.dataDir, 'nats.conf');
      const store = join(ctx.dataDir, 'jetstream');
      writeFileSync(
        config,
        `listen: 127.0.0.1:${port}\n` +
          `jetstream {\n  store_dir: ${JSON.stringify(store)}\n${syncAlways ? '  sync_interval: always\n' : ''}}\n`,
      );
      server = await ctx.spawn({ name: `nats-${build}`, command: binary, args: ['-c', config] });
      await ctx.waitForPort(port, 10_000);
      shared = await open();
    },

    async stop() {
      await shared?.close();
      shared = undefined;
      await server?.stop();
      server = undefined;
    },

    serverPids: () => (server === undefined ? [] : [server.pid]),

    async createQueue(name: string) {
      if (shared === undefined) throw new Error('nats driver not started');
      const jsm = await shared.jetstreamManager();
      await jsm.streams.add({
        name,
        subjects: [name],
        retention: RetentionPolicy.Workqueue,
        storage: StorageType.File,
        num_replicas: 1,
      });
      await jsm.consumers.add(name, {
        durable_name: consumerName,
        ack_policy: AckPolicy.Explicit,
        ack_wait: nanos(60_000),
        // The default (1,000) would cap W3's concurrent batches and W4's 256 workers.
        max_ack_pending: 100_000,
      });
    },

    async openClient(name: string, role: ClientRole) {
      if (shared === undefined) throw new Error('nats driver not started');
      const nc = connectionMode === 'shared' ? shared : await open();
      const js = nc.jetstream();
      const consumer = role === 'producer' ? undefined : await js.consumers.get(name, consumerName);
      return new NatsClient(nc, nc !== shared, js, name, consumer, reserveWith);
    },

    describeSettings() {
      return (
        `nats-server ${version} jetstream { store_dir${syncAlways ? ', sync_interval: always' : ' (default sync)'} }; ` +
        `nats.js ${packageVersion('nats')}; work-queue stream, file storage, durable pull consumer; ` +
        `publish awaits PubAck, reserve = ${reserveWith === 'next' ? 'consumer.next()' : 'js.pull()'}, ` +
        `ack = ackAck(); connection=${connectionMode}`
      );
    },
  };
}
