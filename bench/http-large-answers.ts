/**
 * Large answers of the HTTP API to clients that read them: GET /v1/jobs/{id} of a job with a
 * --payload-mib MiB payload (base64 in the answer), --requests of them from --concurrency
 * keep-alive clients, against a baseline checkout's server in the same run (--against, its
 * src/ is loaded), the two interleaved, medians of --runs (3). Printed: answers/s, the server's
 * CPU per answer, and the load average. It measures what writing an answer in pieces of 64 KiB
 * (src/platform/write-deadline.ts, for the write deadline) costs a client that reads at once.
 *
 *   npx tsx bench/http-large-answers.ts --against /work/wt/base9 [--runs 3] [--requests 200]
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { credentials, Metadata } from '@grpc/grpc-js';
import { EnqueueJob } from '../clients/typescript/src/gen/sepp/v1/job.js';
import { QueueServiceClient } from '../clients/typescript/src/gen/sepp/v1/queue_service.js';
import { markdownTable, median } from './engine-lib.ts';
import { BenchServer } from './lib/server-process.ts';

const { values: args } = parseArgs({
  options: {
    against: { type: 'string' },
    runs: { type: 'string', default: '3' },
    requests: { type: 'string', default: '200' },
    concurrency: { type: 'string', default: '4' },
    'payload-mib': { type: 'string', default: '4' },
  },
});
if (args.against === undefined) throw new Error('--against DIR: a built checkout to compare with');
const runs = Number(args.runs);
const requests = Number(args.requests);
const concurrency = Number(args.concurrency);
const payload = Buffer.alloc(Number(args['payload-mib']) * 1024 * 1024, 'x');

interface Figures {
  answersPerS: number;
  cpuMsPerAnswer: number;
}

/** One run: a fresh server of `srcDir`, one job, `requests` GETs of it; the figures. */
async function run(srcDir: string | undefined): Promise<Figures> {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-bench-large-'));
  const configFile = join(dir, 'sepp.toml');
  writeFileSync(
    configFile,
    '[queue_defaults]\nmax_payload_bytes = "8MiB"\n[grpc]\nmax_message_bytes = "10MiB"\n',
  );
  process.env.SEPP_BENCH_CONFIG = configFile;
  const server = await BenchServer.start(join(dir, 'data'), 'relaxed', srcDir);
  try {
    const client = new QueueServiceClient(`127.0.0.1:${server.port}`, credentials.createInsecure(), {
      'grpc.max_send_message_length': 16 * 1024 * 1024,
    });
    const jobId = await new Promise<string>((resolve, reject) =>
      client.enqueue(
        { job: EnqueueJob.fromPartial({ queue: 'large', type: 'read', payload }) },
        new Metadata(),
        (error, answer) => (error ? reject(error) : resolve(answer.jobId)),
      ),
    );
    client.close();
    const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
    const get = () =>
      new Promise<number>((resolve, reject) => {
        const req = request(
          { host: '127.0.0.1', port: server.httpPort ?? 0, path: `/v1/jobs/${jobId}`, agent },
          (res) => {
            let bytes = 0;
            res.on('data', (chunk: Buffer) => {
              bytes += chunk.length;
            });
            res.on('end', () =>
              res.statusCode === 200 ? resolve(bytes) : reject(new Error(`${res.statusCode}`)),
            );
          },
        );
        req.on('error', reject);
        req.end();
      });
    await get(); // warm
    const before = await server.stats();
    const startMs = performance.now();
    let left = requests;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (left > 0) {
          left--;
          await get();
        }
      }),
    );
    const tookMs = performance.now() - startMs;
    const after = await server.stats();
    agent.destroy();
    return {
      answersPerS: (requests / tookMs) * 1000,
      cpuMsPerAnswer: (after.cpuMs - before.cpuMs) / requests,
    };
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const sides = { base: join(args.against, 'src'), this: undefined } as const;
const figures: Record<keyof typeof sides, Figures[]> = { base: [], this: [] };
const loads: number[] = [];
for (let i = 0; i < runs; i++) {
  for (const side of i % 2 === 0 ? (['base', 'this'] as const) : (['this', 'base'] as const)) {
    figures[side].push(await run(sides[side]));
    loads.push(loadavg()[0] ?? 0);
  }
}
const row = (side: keyof typeof sides) => [
  side === 'base' ? `base (${args.against})` : 'this tree',
  median(figures[side].map((f) => f.answersPerS)).toFixed(1),
  median(figures[side].map((f) => f.cpuMsPerAnswer)).toFixed(2),
];
console.log(
  `${requests} GETs of a job with a ${args['payload-mib']} MiB payload, ${concurrency} keep-alive clients, ` +
    `medians of ${runs} interleaved runs; ${cpus().length} cores, load ${loads.map((l) => l.toFixed(1)).join(' ')}\n`,
);
console.log(markdownTable(['server', 'answers/s', 'server CPU ms/answer'], [row('base'), row('this')]));
