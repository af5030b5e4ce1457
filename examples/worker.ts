/**
 * The worker of worker.cjs in TypeScript: the package ships its type declarations, so
 * payloads and handlers are typed with no @types package. Compiles as an ES module or as
 * CommonJS (the test type-checks it both ways against the packed package).
 */
import { SeppClient, type WorkerJob } from '@sepp-queue/client';

interface Email {
  to: string;
}

// `job.data` is the decoded JSON payload, typed by the handler.
async function send(job: WorkerJob<Email>): Promise<void> {
  console.log(`sending to ${job.data.to} (attempt ${job.attempt})`); // Return to complete the job; throw to retry it later.
}

interface Report {
  week: number;
}

// What a handler returns is the job's result (here JSON): `sepp job ID`, the admin UI and
// a producer's `client.waitFor(id)` show it. `job.progress()` says how far along it is.
async function build(job: WorkerJob<Report>): Promise<{ url: string }> {
  await job.progress(50, { step: 'render' });
  return { url: `https://files.example.com/report-${job.data.week}.pdf` };
}

// The server and the API key from where `sepp admin new-api-key` says to put them.
const client = SeppClient.connect(process.env.SEPP_SERVER, { apiKey: process.env.SEPP_API_KEY });
client.worker({ queues: ['emails'], concurrency: 10, handlers: { send } });
client.worker({ queues: ['reports'], handlers: { build } });
process.once('SIGINT', () => void client.close()); // Ctrl-C: lets running jobs finish, then exits.
process.once('SIGTERM', () => void client.close());
