/**
 * A TCP proxy in front of a real server that loses one answer on command: once armed, the first
 * bytes the server sends while `when()` holds are not forwarded, and that connection is closed on
 * both sides — as a load balancer restarting, or a network drop, between the server's commit and
 * the client's read. The client sees its call fail (UNAVAILABLE) with the change already made.
 */
import { type AddressInfo, createServer, type Server, Socket } from 'node:net';

export class AnswerCutProxy {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private when: (() => boolean) | undefined;
  /** Connections cut so far. */
  cuts = 0;

  constructor(targetPort: number) {
    this.server = createServer((client) => {
      const upstream = new Socket();
      const pair = [client, upstream];
      for (const socket of pair) this.sockets.add(socket);
      const end = () => {
        for (const socket of pair) {
          socket.destroy();
          this.sockets.delete(socket);
        }
      };
      client.on('data', (chunk) => upstream.write(chunk));
      upstream.on('data', (chunk) => {
        if (this.when?.() === true) {
          this.when = undefined;
          this.cuts++;
          end();
          return;
        }
        client.write(chunk);
      });
      for (const socket of pair) socket.on('close', end).on('error', end);
      upstream.connect(targetPort, '127.0.0.1');
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Cuts the connection that next carries server bytes while `when()` holds (once). */
  cutNextAnswer(when: () => boolean): void {
    this.when = when;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
