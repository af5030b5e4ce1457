/**
 * `--page-size`, `--page-token` and `--all` for the commands whose lists the
 * server pages (issue 29): a page size or a token shows that one page and
 * ends with the token of the next; `--all` follows every page. Without them
 * each command keeps its default (every queue; the first `--limit` dead letters).
 */
import type { Argv } from 'yargs';
import { integerFlag, UsageError } from '../failure.ts';
import type { CliIo } from '../io.ts';
import { print } from './connection.ts';

/** One page (`pageSize` undefined: the server's default), or every page. */
export type Paging = { kind: 'page'; pageSize: number | undefined; pageToken: string } | { kind: 'all' };

export function withPaging<T>(y: Argv<T>) {
  return y
    .option('page-size', {
      type: 'string',
      describe: "Show one page of this many (default 100, at most the server's limits.max_page_size)",
    })
    .option('page-token', { type: 'string', describe: 'Show the page after the one that printed this token' })
    .option('all', { type: 'boolean', describe: 'Follow every page' });
}

/** The paging the flags ask for; null when none was given. */
export function pagingOf(args: { pageSize?: string; pageToken?: string; all?: boolean }): Paging | null {
  const page = args.pageSize !== undefined || args.pageToken !== undefined;
  if (args.all === true && page) throw new UsageError('give --all or --page-size/--page-token, not both');
  if (args.all === true) return { kind: 'all' };
  if (!page) return null;
  return {
    kind: 'page',
    pageSize:
      args.pageSize === undefined
        ? undefined
        : integerFlag('page-size', args.pageSize, { min: 1, max: Number.MAX_SAFE_INTEGER }),
    pageToken: args.pageToken ?? '',
  };
}

/** After one page's table: how to get the next, if there is one. */
export function printNextPage(io: CliIo, nextPageToken: string | null): void {
  if (nextPageToken !== null && nextPageToken !== '') print(io, `(more: --page-token ${nextPageToken})`);
}
