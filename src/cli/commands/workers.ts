/**
 * `sepp workers`: the workers connected now and the leases each holds, and
 * how many reserves (long-polls and Work streams) wait for jobs.
 */
import type { Argv } from 'yargs';
import type { SeppClient, WorkerInfo } from '../../../clients/typescript/src/index.ts';
import type { CliIo } from '../io.ts';
import { print, printJson, runWithClient, wantsJson, withConnection } from './connection.ts';
import { age, table } from './format.ts';

/**
 * Every page of the workers, and the reserves waiting as the last page was
 * read (the server counts them on every page).
 */
async function workersNow(client: SeppClient): Promise<{ workers: WorkerInfo[]; waitingReserves: number }> {
  const workers: WorkerInfo[] = [];
  let pageToken = '';
  let waitingReserves = 0;
  do {
    const page = await client.listWorkersPage({ pageToken });
    workers.push(...page.workers);
    waitingReserves = page.waitingReserves;
    pageToken = page.nextPageToken;
  } while (pageToken !== '');
  return { workers, waitingReserves };
}

/** `3 reserves (long-polls and Work streams) waiting for jobs now`. */
function waitingLine(count: number): string {
  return `${count} ${count === 1 ? 'reserve' : 'reserves'} (long-polls and Work streams) waiting for jobs now`;
}

export function registerWorkersCommand(parser: Argv, io: CliIo): void {
  parser.command(
    'workers',
    'List the workers connected now (id, address, transport, queues, jobs held, done/failed, last seen) and the reserves waiting for jobs',
    (y) => withConnection(io, y),
    (args) =>
      runWithClient(io, args, async (client) => {
        const { workers, waitingReserves } = await workersNow(client);
        if (wantsJson(args)) {
          printJson(io, workers); // an array, as before the count was shown: scripts read it
          return;
        }
        if (workers.length === 0) {
          print(
            io,
            'no worker is connected (Work streams are listed while open, Reserve callers for 5 minutes)',
          );
          if (waitingReserves > 0) print(io, waitingLine(waitingReserves));
          return;
        }
        const nowMs = Date.now();
        print(
          io,
          table(
            [
              'WORKER',
              'ADDRESS',
              'TRANSPORT',
              'QUEUES',
              'JOBS',
              'HOLDING FOR',
              'DONE/FAILED 15M',
              'LAST SEEN',
            ],
            workers.map((w) => [
              w.workerId,
              w.address,
              w.transport === 'work_stream' ? 'stream' : 'reserve',
              w.queues.join(','),
              String(w.jobsHeld),
              w.oldestLeaseAtMs === null ? '-' : age(Math.max(0, nowMs - w.oldestLeaseAtMs)),
              `${w.completedRecent}/${w.failedRecent}`,
              `${age(Math.max(0, nowMs - w.lastSeenAtMs))} ago`,
            ]),
          ),
        );
        print(io, waitingLine(waitingReserves));
      }),
  );
}
