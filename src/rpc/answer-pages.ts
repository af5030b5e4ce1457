/**
 * Answers that list stored things are bounded in bytes as well as in entries
 * (issue 29, item 2): a page of `max_page_size` entries whose entries are
 * large (metadata, error texts, settings lists) would otherwise be more than
 * a client takes in one message (gRPC's default 4 MiB) or than the server may
 * send. A page holds the entries that fit, at least one, and its token
 * continues after the last one sent.
 */
import type { Page } from '../engine/types.ts';

/** gRPC's default receive limit, which most clients keep: what an answer may be when the caller says nothing. */
export const defaultAnswerBytes = 4 * 1024 * 1024;
/** Room a list's answer leaves for its page token, its other fields and field tags. */
const listAnswerMarginBytes = 1024;
/** Per entry: its field tag and length prefix. */
const entryFramingBytes = 8;

/** The bytes a list answer's entries may take: 4 MiB, or less when the server sends less. */
export function listAnswerBytes(maxMessageBytes: number): number {
  return Math.min(defaultAnswerBytes, maxMessageBytes) - listAnswerMarginBytes;
}

/** How many of `items`, from the first, fit `bytesMax` by `sizeOf` (with their framing); at least one. */
export function countFitting<T>(items: readonly T[], sizeOf: (item: T) => number, bytesMax: number): number {
  let bytes = 0;
  for (let i = 0; i < items.length; i++) {
    bytes += sizeOf(items[i] as T) + entryFramingBytes;
    if (bytes > bytesMax && i > 0) return i;
  }
  return items.length;
}

/**
 * A page of a list the store pages by cursor, bounded in bytes: when the entries of
 * the page asked for do not fit, the same page is asked for again with as many
 * entries as fit, so its cursor follows the last entry sent (the second read happens
 * only for pages of large entries).
 */
export async function fitCursorPage<T, Out>(
  read: (pageSize: number | undefined) => Promise<Page<T>>,
  pageSize: number | undefined,
  toAnswer: (item: T) => Out,
  sizeOf: (entry: Out) => number,
  bytesMax: number,
): Promise<{ items: Out[]; nextCursor: string | null }> {
  const page = await read(pageSize);
  const entries = page.items.map(toAnswer);
  const fitting = countFitting(entries, sizeOf, bytesMax);
  if (fitting === entries.length) return { items: entries, nextCursor: page.nextCursor };
  const shorter = await read(fitting);
  return { items: shorter.items.map(toAnswer), nextCursor: shorter.nextCursor };
}
