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

const client = SeppClient.connect(process.env.SEPP_SERVER ?? '127.0.0.1:50051');
client.worker({ queues: ['emails'], concurrency: 10, handlers: { send } });
process.once('SIGINT', () => void client.close()); // Ctrl-C: lets running jobs finish, then exits.
process.once('SIGTERM', () => void client.close());
