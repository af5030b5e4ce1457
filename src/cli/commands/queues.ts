/** `sepp queues`: every queue with its counts by state, and its flow control when any queue uses it. */
import type { Argv } from 'yargs';
import type { QueueInfo, RateLimit } from '../../../clients/typescript/src/index.ts';
import type { CliIo } from '../io.ts';
import { print, printJson, runWithClient, wantsJson, withConnection } from './connection.ts';
import { age, table } from './format.ts';
import { pagingOf, printNextPage, withPaging } from './paging.ts';

/** Whether a queue has limits or groups worth a column (docs/flow-control.md). */
function usesFlowControl(q: QueueInfo): boolean {
  const s = q.settings;
  return (
    s.maxLeased > 0 ||
    s.rateLimit.leases > 0 ||
    s.groupMaxLeased > 0 ||
    s.groupRateLimit.leases > 0 ||
    q.readyGroups > 0 ||
    q.throttledWorkers > 0
  );
}

/** "100/1s" for a rate limit, "-" for none. */
export function rateText(rate: RateLimit): string {
  return rate.leases === 0 ? '-' : `${rate.leases}/${age(rate.periodMs)}`;
}

export function registerQueuesCommand(parser: Argv, io: CliIo): void {
  parser.command(
    'queues',
    'List queues with their jobs by state, paused flag and oldest ready job',
    (y) => withConnection(io, withPaging(y)),
    (args) =>
      runWithClient(io, args, async (client) => {
        const paging = pagingOf(args);
        const page =
          paging?.kind === 'page'
            ? await client.queues.listPage({
                ...(paging.pageSize === undefined ? {} : { pageSize: paging.pageSize }),
                pageToken: paging.pageToken,
              })
            : { queues: await client.listQueues(), nextPageToken: '' };
        const { queues } = page;
        if (wantsJson(args)) {
          printJson(
            io,
            paging?.kind === 'page' ? { queues, nextPageToken: page.nextPageToken || null } : queues,
          );
          return;
        }
        if (queues.length === 0) {
          print(io, 'no queues yet (a queue appears with its first job)');
          return;
        }
        // The flow-control columns appear only when some queue has limits or groups.
        const flow = queues.some(usesFlowControl);
        const header = [
          'QUEUE',
          'PAUSED',
          'WAITING',
          'SCHEDULED',
          'READY',
          'LEASED',
          'DEAD',
          'COMPLETED',
          'CANCELLED',
          'OLDEST READY',
          'RESERVES WAITING',
        ];
        if (flow) header.push('RATE', 'GROUPS', 'THROTTLED');
        print(
          io,
          table(
            header,
            queues.map((q) => {
              const row = [
                q.name,
                q.paused ? 'yes' : 'no',
                String(q.counts.waiting),
                String(q.counts.scheduled),
                String(q.counts.ready),
                // In use out of the limit, when there is one.
                q.settings.maxLeased > 0
                  ? `${q.counts.leased}/${q.settings.maxLeased}`
                  : String(q.counts.leased),
                String(q.counts.dead),
                String(q.counts.completed),
                String(q.counts.cancelled),
                q.oldestReadyAgeMs === null ? '-' : age(q.oldestReadyAgeMs),
                String(q.waitingWorkers),
              ];
              if (flow) {
                row.push(
                  rateText(q.settings.rateLimit),
                  q.readyGroupsCapped ? `${q.readyGroups}+` : String(q.readyGroups),
                  String(q.throttledWorkers),
                );
              }
              return row;
            }),
          ),
        );
        printNextPage(io, page.nextPageToken);
      }),
  );
}
