/**
 * A TCP proxy in front of a real server whose open connections turn into a blackhole on command:
 * it stops forwarding in both directions and closes nothing, as a NAT or load balancer that dropped
 * the flow, or a machine lost, would. Each side's keepalive pings are what can notice it.
 */
import { type AddressInfo, createServer, type Server, Socket } from 'node:net';

/** A TCP proxy to `target`; `blackhole()` silences the connections open now, new ones pass. */
export class BlackholeProxy {
  private readonly server: Server;
  private readonly open = new Set<{ silent: boolean; sockets: Socket[] }>();

  constructor(targetPort: number) {
    this.server = createServer((client) => {
      const upstream = new Socket();
      const pair = { silent: false, sockets: [client, upstream] };
      this.open.add(pair);
      const forward = (from: Socket, to: Socket) =>
        from.on('data', (chunk) => {
          if (!pair.silent) to.write(chunk);
        });
      forward(client, upstream);
      forward(upstream, client);
      const end = () => {
        this.open.delete(pair);
        client.destroy();
        upstream.destroy();
      };
      for (const socket of pair.sockets) socket.on('close', end).on('error', end);
      upstream.connect(targetPort, '127.0.0.1');
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Stops forwarding on every open connection, in both directions; nothing is closed. */
  blackhole(): number {
    for (const pair of this.open) pair.silent = true;
    return this.open.size;
  }

  /** Closes the server's side of the silenced connections, as the server's own keepalive would. */
  endSilencedUpstreams(): void {
    for (const pair of this.open) if (pair.silent) pair.sockets[1]?.destroy();
  }

  async close(): Promise<void> {
    for (const pair of this.open) for (const socket of pair.sockets) socket.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
