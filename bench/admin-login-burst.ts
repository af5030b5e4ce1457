/**
 * The real admin's login while wrong-password logins flood the admin port
 * (issue 14, item 11; SECURITY.md states the bound this measures).
 *
 * A server as `sepp serve` runs it (a child process, so the attackers' client
 * work does not share its event loop), one admin user with the default scrypt
 * settings (ln=15, r=8, p=1). The admin logs in once from 127.0.0.1 before
 * anything else, so that address is known. Then, per scenario, `--attackers`
 * loopback addresses (127.0.1x.y, new ones per scenario) each keep `--per-attacker` wrong logins in
 * flight while the admin logs in `--logins` times, one after another, and the
 * table shows the admin's login latency (only successful logins count towards
 * p50/p95) and what happened to the attackers' requests.
 *
 * An attacker refused with 429 tries again after `--pause-ms`, so that the flood
 * loads the password checks more than it measures this machine's HTTP throughput.
 *
 *   spraying  attackers guess random user names (no per-user lockout is reached)
 *   targeted  attackers guess the admin's own name (the per-user lockout starts)
 *   usual     the admin logs in from 127.0.0.1, where they logged in before
 *   new       the admin logs in from 127.0.2.1, never seen before
 *
 * Usage: npx tsx bench/admin-login-burst.ts [--attackers 50] [--per-attacker 2] [--logins 20] [--pause-ms 100]
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { hashPassword } from '../src/admin/password.ts';
import { startServer } from '../src/app.ts';
import { loadConfig } from '../src/config/index.ts';
import { silentLogger } from '../src/telemetry/index.ts';

const { values: args } = parseArgs({
  options: {
    serve: { type: 'string' },
    attackers: { type: 'string', default: '50' },
    'per-attacker': { type: 'string', default: '2' },
    logins: { type: 'string', default: '20' },
    'pause-ms': { type: 'string', default: '100' },
  },
});

const adminPassword = 'bench-admin-password-7d1f';

if (args.serve !== undefined) await serve(args.serve);
else await main();

/** The child: the server, listening on a free port, which it reports over IPC. */
async function serve(dir: string): Promise<void> {
  const config = loadConfig({
    flags: {
      config: join(dir, 'sepp.toml'),
      dataDir: join(dir, 'data'),
      grpcListen: '127.0.0.1:0',
      adminListen: '127.0.0.1:0',
    },
    env: {},
    cwd: dir,
  });
  const server = await startServer(config, { logger: silentLogger, build: { version: 'bench', commit: '' } });
  process.send?.({ port: server.adminPort });
  process.on('message', async () => {
    await server.shutdown();
    process.exit(0);
  });
}

interface Answer {
  status: number;
  ms: number;
}

/** One login over a fresh connection from `localAddress`. */
function login(port: number, localAddress: string, user: string, password: string): Promise<Answer> {
  const body = JSON.stringify({ user, password });
  const startedMs = performance.now();
  return new Promise((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        localAddress,
        method: 'POST',
        path: '/api/v1/session',
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - startedMs }));
      },
    );
    req.on('error', () => resolve({ status: 0, ms: performance.now() - startedMs }));
    req.end(body);
  });
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

interface Row {
  scenario: string;
  ok: number;
  refused: number;
  p50: number;
  p95: number;
  max: number;
  attacks: Map<number, number>;
}

async function scenario(
  port: number,
  index: number,
  name: string,
  attack: 'none' | 'spraying' | 'targeted',
  from: string,
): Promise<Row> {
  const attackers = Number(args.attackers);
  const perAttacker = Number(args['per-attacker']);
  const pauseMs = Number(args['pause-ms']);
  const attacks = new Map<number, number>();
  let stop = false;
  let guess = 0;
  const loops: Promise<void>[] = [];
  if (attack !== 'none') {
    for (let a = 0; a < attackers; a++) {
      // Fresh attackers for each scenario: the last ones are still locked out.
      const address = `127.0.${10 + index}.${a + 1}`;
      for (let k = 0; k < perAttacker; k++) {
        loops.push(
          (async () => {
            while (!stop) {
              guess++;
              const user = attack === 'targeted' ? 'admin' : `user-${guess}`;
              const answer = await login(port, address, user, `wrong-${guess}`);
              attacks.set(answer.status, (attacks.get(answer.status) ?? 0) + 1);
              if (answer.status === 429) await new Promise((resolve) => setTimeout(resolve, pauseMs));
            }
          })(),
        );
      }
    }
    // Let the flood fill the queue before the admin comes.
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  const times: number[] = [];
  let refused = 0;
  for (let i = 0; i < Number(args.logins); i++) {
    const answer = await login(port, from, 'admin', adminPassword);
    if (answer.status === 200) times.push(answer.ms);
    else refused++;
  }
  stop = true;
  await Promise.all(loops);
  times.sort((x, y) => x - y);
  return {
    scenario: name,
    ok: times.length,
    refused,
    p50: percentile(times, 50),
    p95: percentile(times, 95),
    max: times.at(-1) ?? Number.NaN,
    attacks,
  };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-bench-login-'));
  const hash = await hashPassword(adminPassword);
  writeFileSync(
    join(dir, 'sepp.toml'),
    `[[admin.users]]\nname = "admin"\nrole = "admin"\npassword_hash = "${hash}"\n`,
  );
  // The server's environment is its own: nothing of the harness's leaks into it.
  const child = fork(process.argv[1] ?? '', ['--serve', dir], {
    execArgv: ['--import', 'tsx'],
    env: { PATH: process.env.PATH ?? '' },
  });
  const port = await new Promise<number>((resolve) =>
    child.once('message', (m: { port: number }) => resolve(m.port)),
  );
  try {
    const seed = await login(port, '127.0.0.1', 'admin', adminPassword);
    if (seed.status !== 200) throw new Error(`the admin cannot log in: ${seed.status}`);
    const rows = [
      await scenario(port, 0, 'no attack, usual address', 'none', '127.0.0.1'),
      await scenario(port, 1, 'spraying, usual address', 'spraying', '127.0.0.1'),
      await scenario(port, 2, 'spraying, new address', 'spraying', '127.0.2.1'),
      await scenario(port, 3, 'targeted, usual address', 'targeted', '127.0.0.1'),
      await scenario(port, 4, 'targeted, new address', 'targeted', '127.0.2.2'),
    ];
    const fmt = (ms: number) => (Number.isNaN(ms) ? '-' : ms.toFixed(0));
    const attackText = (m: Map<number, number>) =>
      [...m.entries()]
        .sort(([a], [b]) => a - b)
        .map(([status, n]) => `${n}×${status}`)
        .join(' ') || '-';
    console.log(
      `admin login under a login flood: ${args.attackers} attacker addresses × ${args['per-attacker']} in flight, ` +
        `${args.logins} admin logins per row, scrypt ln=15 r=8 p=1`,
    );
    console.log(
      `machine: ${cpus().length} cores, load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}\n`,
    );
    console.log('| scenario | admin ok | admin refused | p50 ms | p95 ms | max ms | attackers’ answers |');
    console.log('| --- | ---: | ---: | ---: | ---: | ---: | --- |');
    for (const r of rows) {
      console.log(
        `| ${r.scenario} | ${r.ok} | ${r.refused} | ${fmt(r.p50)} | ${fmt(r.p95)} | ${fmt(r.max)} | ${attackText(r.attacks)} |`,
      );
    }
  } finally {
    child.send('stop');
    await new Promise((resolve) => child.once('exit', resolve));
    rmSync(dir, { recursive: true, force: true });
  }
}
