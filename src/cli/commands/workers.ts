/** `sepp workers`: the workers connected now and the leases each holds. */
import type { Argv } from 'yargs';
import type { CliIo } from '../io.ts';
import { print, printJson, runWithClient, wantsJson, withConnection } from './connection.ts';
import { age, table } from './format.ts';

export function registerWorkersCommand(parser: Argv, io: CliIo): void {
  parser.command(
    'workers',
    'List the workers connected now: id, address, transport, queues, jobs held, done/failed, last seen',
    (y) => withConnection(io, y),
    (args) =>
      runWithClient(io, args, async (client) => {
        const workers = await client.listWorkers();
        if (wantsJson(args)) {
          printJson(io, workers);
          return;
        }
        if (workers.length === 0) {
          print(
            io,
            'no worker is connected (Work streams are listed while open, Reserve callers for 5 minutes)',
          );
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
      }),
  );
}
