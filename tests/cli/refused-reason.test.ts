/**
 * A server that refuses connections but says why at its /readyz (a server shut out by a newer
 * schema closes its gRPC port: tests/store/postgres-serve.test.ts): the CLI reads the admin
 * address from the configuration `sepp serve` would read in its shell and prints the reason; it
 * asks nothing when that configuration is of another server. A stand-in answers /readyz.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { runCli } from '../helpers/cli.ts';

let readyz: Server;
let readyzPort = 0;
const asked: string[] = [];
/** A port nothing listens on (it was free a moment ago). */
let refusedPort = 0;
let work = '';

const reason =
  'the PostgreSQL schema "jobs" was migrated to version 99 by a newer sepp while this server ran; \u001b[2Jstop it';

async function freePort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  assert.ok(address !== null && typeof address === 'object');
  return address.port;
}

before(async () => {
  readyz = createServer((request, response) => {
    asked.push(`${request.method} ${request.url}`);
    response.writeHead(503, { 'content-type': 'application/json' });
    response.end(`${JSON.stringify({ status: 'not_ready', reason })}\n`);
  });
  await new Promise<void>((resolve) => readyz.listen(0, '127.0.0.1', resolve));
  const address = readyz.address();
  assert.ok(address !== null && typeof address === 'object');
  readyzPort = address.port;
  refusedPort = await freePort();
  work = mkdtempSync(join(tmpdir(), 'sepp-refused-'));
});

after(async () => {
  await new Promise((resolve) => readyz.close(resolve));
  rmSync(work, { recursive: true, force: true });
});

test('refused: the reason /readyz gives, at the admin address ./sepp.toml names, once', async () => {
  writeFileSync(
    join(work, 'sepp.toml'),
    `[server]\ngrpc_listen = "127.0.0.1:${refusedPort}"\nadmin_listen = "127.0.0.1:${readyzPort}"\n`,
  );
  asked.length = 0;
  const run = await runCli(['queues', '--server', `127.0.0.1:${refusedPort}`], { cwd: work });
  assert.equal(run.code, 3, run.stderr);
  // One line, the terminal's control characters blanked out.
  assert.equal(
    run.stderr,
    `sepp: cannot reach sepp at 127.0.0.1:${refusedPort}: connection refused; the server says why ` +
      `(http://127.0.0.1:${readyzPort}/readyz): the PostgreSQL schema "jobs" was migrated to version 99 ` +
      'by a newer sepp while this server ran;  [2Jstop it\n',
  );
  assert.deepEqual(asked, ['GET /readyz']);
});

test('refused on a port the configuration does not name: nothing asked, the refusal as it was', async () => {
  // SEPP_ADMIN_LISTEN names the stand-in, but the server configured here listens elsewhere.
  asked.length = 0;
  const run = await runCli(['queues', '--server', `127.0.0.1:${refusedPort}`], {
    env: { SEPP_ADMIN_LISTEN: `127.0.0.1:${readyzPort}`, SEPP_GRPC_LISTEN: `127.0.0.1:${readyzPort}` },
  });
  assert.equal(run.code, 3, run.stderr);
  assert.match(run.stderr, /^sepp: cannot reach sepp at \S+: connection refused; is it running/);
  assert.deepEqual(asked, []);
});
