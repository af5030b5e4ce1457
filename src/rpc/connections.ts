/**
 * The gRPC port's connections. sepp accepts them itself and hands each to
 * grpc-js (a connection injector), so that it can bound them, which grpc-js
 * alone cannot:
 *
 * - at most `maxConnections` open at once: one more is closed as it arrives;
 * - a handshake deadline: a new connection must finish TLS and open its first
 *   call within `handshakeTimeoutMs`, or it is closed — a client that
 *   connects and sends nothing (or stalls in the TLS handshake) cannot hold a
 *   descriptor for long.
 *
 * Idle connections (no call open) are closed by grpc-js itself
 * (`grpc.max_connection_idle_ms`); calls per connection are capped by HTTP/2
 * (`grpc.max_concurrent_streams`); what a call may do before it presented a
 * key is admission.ts's business. Each connection is known by its peer
 * address (`ip:port`), which is also how grpc-js names a call's peer.
 */
import { lookup } from 'node:dns/promises';
import { createServer as createNetServer, isIP, type Server as NetServer, type Socket } from 'node:net';

export interface ConnectionLimits {
  readonly maxConnections: number;
  readonly handshakeTimeoutMs: number;
}

/** Why a connection was closed by sepp rather than by its client. */
export type ConnectionRejection = 'max_connections' | 'handshake_timeout';
/** Why admission.ts refused a call: mostly when its headers arrived, before its body was read. */
export type CallRefusal = 'unauthenticated' | 'keyless_limit' | 'first_message_timeout' | 'unread_answers';

export interface ConnectionStats {
  /** Connections open now. */
  readonly open: number;
  /** Connections sepp closed, by reason, since it started. */
  readonly rejected: Readonly<Record<ConnectionRejection, number>>;
  /** Calls refused before their body was read, by reason, since it started. */
  readonly refusedCalls: Readonly<Record<CallRefusal, number>>;
}

/** One accepted connection, as the admission interceptor sees it. */
export class Connection {
  /** Calls open now that presented no key (health checks, reflection). */
  keylessCalls = 0;
  private handshakeTimer: NodeJS.Timeout | undefined;

  constructor(readonly socket: Socket) {}

  /** A call's headers arrived: the handshake is done. */
  callOpened(): void {
    if (this.handshakeTimer === undefined) return;
    clearTimeout(this.handshakeTimer);
    this.handshakeTimer = undefined;
  }

  /** Closes the connection unless a call opens within `timeoutMs`. */
  expectCallWithin(timeoutMs: number, onTimeout: () => void): void {
    this.handshakeTimer = setTimeout(onTimeout, timeoutMs);
    this.handshakeTimer.unref();
  }

  closed(): void {
    this.callOpened();
  }
}

export class Connections {
  private readonly byPeer = new Map<string, Connection>();
  private readonly servers: NetServer[] = [];
  private readonly rejected: Record<ConnectionRejection, number> = {
    max_connections: 0,
    handshake_timeout: 0,
  };
  readonly refusedCalls: Record<CallRefusal, number> = {
    unauthenticated: 0,
    keyless_limit: 0,
    first_message_timeout: 0,
    unread_answers: 0,
  };

  constructor(
    private readonly limits: ConnectionLimits,
    /** Hands an accepted socket to grpc-js. */
    private readonly inject: (socket: Socket) => void,
  ) {}

  /**
   * Listens on `host:port` (port 0 picks a free one); a host name listens on
   * every address it resolves to, as grpc-js would. Resolves with the port.
   */
  async listen(host: string, port: number): Promise<number> {
    const addresses = isIP(host) !== 0 ? [host] : (await lookup(host, { all: true })).map((a) => a.address);
    let bound = port;
    for (const address of addresses) bound = await this.listenOn(address, bound);
    return bound;
  }

  private listenOn(host: string, port: number): Promise<number> {
    const server = createNetServer({ noDelay: true }, (socket) => this.accept(socket));
    this.servers.push(server);
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host, port }, () => {
        server.off('error', reject);
        const address = server.address();
        resolve(typeof address === 'object' && address !== null ? address.port : port);
      });
    });
  }

  private accept(socket: Socket): void {
    // A reset before grpc-js took the socket over must not become an unhandled 'error'.
    socket.on('error', () => {});
    if (this.byPeer.size >= this.limits.maxConnections) {
      this.rejected.max_connections++;
      socket.destroy();
      return;
    }
    const peer = `${socket.remoteAddress}:${socket.remotePort}`;
    const connection = new Connection(socket);
    this.byPeer.set(peer, connection);
    socket.once('close', () => {
      connection.closed();
      if (this.byPeer.get(peer) === connection) this.byPeer.delete(peer);
    });
    connection.expectCallWithin(this.limits.handshakeTimeoutMs, () => {
      this.rejected.handshake_timeout++;
      socket.destroy();
    });
    this.inject(socket);
  }

  /** The connection a call arrived on, by the call's peer (`ip:port`). */
  of(peer: string): Connection | undefined {
    return this.byPeer.get(peer);
  }

  stats(): ConnectionStats {
    return { open: this.byPeer.size, rejected: { ...this.rejected }, refusedCalls: { ...this.refusedCalls } };
  }

  /** Stops accepting connections; those open stay (grpc-js drains them). */
  stopAccepting(): void {
    for (const server of this.servers) server.close();
  }

  /** Closes every connection at once (the end of a forced shutdown). */
  destroyAll(): void {
    for (const connection of this.byPeer.values()) connection.socket.destroy();
  }
}
