/**
 * A test server (server.ts) with an SDK client connected to it, for the tests of a file
 * or of a suite: started in its `before`, the client closed and the server disposed in
 * its `after`. Call it where those hooks belong (top level, or inside a `describe`):
 *
 *     const served = serverAndClient({ toml });
 *     test('…', async () => { await served.client.enqueue('q', 't', 'x'); served.server.dataDir; });
 *
 * Reading `server` or `client` before the hook ran (at module level) throws.
 */
import { after, before } from 'node:test';
import { type ConnectOptions, SeppClient } from '../../clients/typescript/src/index.ts';
import { startTestServer, type TestServer, type TestServerOptions } from './server.ts';

export interface ServerAndClient {
  readonly server: TestServer;
  readonly client: SeppClient;
}

export function serverAndClient(
  options: TestServerOptions = {},
  connectOptions: ConnectOptions = {},
): ServerAndClient {
  let started: ServerAndClient | undefined;
  before(async () => {
    const server = await startTestServer(options);
    started = { server, client: SeppClient.connect(server.address, connectOptions) };
  });
  after(async () => {
    await started?.client.close();
    await started?.server.dispose();
  });
  const get = (): ServerAndClient => {
    if (started === undefined)
      throw new Error('the test server starts in before(): use it in a test or hook');
    return started;
  };
  return {
    get server() {
      return get().server;
    },
    get client() {
      return get().client;
    },
  };
}
