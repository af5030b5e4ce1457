/**
 * Pages over things listed by name (queues, schedules, workers): each page
 * holds at most `pageSize` entries in name order, and its `nextCursor` names
 * where the next one starts. The cursor is opaque to callers (base64url of
 * the last name given, with a tag per list so a cursor of one list is refused
 * by another), and stays valid whatever is created or deleted in between:
 * a page starts after the name, not at an offset.
 */
import { SeppError } from './errors.ts';
import { pageSizeOf } from './page-size.ts';
import type { EngineLimits } from './settings.ts';

/** Entries per page when the caller asks for none. */
export const namePageDefault = 100;

export interface NamePageQuery {
  /** Default 100; at most limits.max_page_size. */
  pageSize?: number;
  /** A previous page's `nextCursor`. */
  cursor?: string;
}

/** Which list a cursor belongs to. */
export type NameList = 'queues' | 'schedules' | 'workers';

const tags: Record<NameList, string> = { queues: 'q', schedules: 's', workers: 'w' };

/** The page size asked for, checked against limits.max_page_size. */
export function namePageSize(query: NamePageQuery, limits: Pick<EngineLimits, 'maxPageSize'>): number {
  return pageSizeOf(query.pageSize, namePageDefault, limits.maxPageSize);
}

/** The name the page starts after; null for the first page. */
export function nameCursorStart(list: NameList, cursor: string | undefined): string | null {
  if (cursor === undefined || cursor === '') return null;
  const tag = `${tags[list]}.`;
  const name = cursor.startsWith(tag) ? Buffer.from(cursor.slice(tag.length), 'base64url').toString() : '';
  if (name === '' || encodeNameCursor(list, name) !== cursor) {
    throw new SeppError(
      'invalid_argument',
      `page_token is not one this server gave for ${list}; pass back next_page_token unchanged, or none for the first page`,
    );
  }
  return name;
}

export function encodeNameCursor(list: NameList, name: string): string {
  return `${tags[list]}.${Buffer.from(name).toString('base64url')}`;
}

/**
 * The page of `names` (any order, distinct) after the cursor: the smallest `pageSize`
 * names greater than it, sorted, and whether more follow. One pass, no copy of the
 * whole list sorted.
 */
export function pickNamePage(
  list: NameList,
  names: Iterable<string>,
  query: NamePageQuery,
  limits: Pick<EngineLimits, 'maxPageSize'>,
): { names: string[]; nextCursor: string | null } {
  const page = pickKeyedPage(list, names, (name) => name, query, limits);
  return { names: page.items, nextCursor: page.nextCursor };
}

/**
 * The page of `items` (any order, with distinct keys) after the cursor: the `pageSize`
 * items of smallest key greater than it, in key order, and the cursor of the next page.
 */
export function pickKeyedPage<T>(
  list: NameList,
  items: Iterable<T>,
  keyOf: (item: T) => string,
  query: NamePageQuery,
  limits: Pick<EngineLimits, 'maxPageSize'>,
): { items: T[]; nextCursor: string | null } {
  const pageSize = namePageSize(query, limits);
  const after = nameCursorStart(list, query.cursor);
  const candidates: { key: string; item: T }[] = [];
  for (const item of items) {
    const key = keyOf(item);
    if (after === null || key > after) candidates.push({ key, item });
  }
  candidates.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const page = candidates.slice(0, pageSize);
  const last = page.at(-1);
  return {
    items: page.map((c) => c.item),
    nextCursor: candidates.length > pageSize && last !== undefined ? encodeNameCursor(list, last.key) : null,
  };
}

/**
 * The first entries of a page that fit `bytesMax` by `sizeOf` (at least one, so a page
 * always moves on), and the cursor after the last one kept: a page is bounded in bytes
 * as well as in entries, however large its entries grow (a queue's settings hold lists).
 */
export function fitNamePage<T>(
  list: NameList,
  items: readonly T[],
  nextCursor: string | null,
  nameOf: (item: T) => string,
  sizeOf: (item: T) => number,
  bytesMax: number,
): { items: T[]; nextCursor: string | null } {
  let bytes = 0;
  for (let i = 0; i < items.length; i++) {
    bytes += sizeOf(items[i] as T);
    if (bytes > bytesMax && i > 0) {
      return { items: items.slice(0, i), nextCursor: encodeNameCursor(list, nameOf(items[i - 1] as T)) };
    }
  }
  return { items: [...items], nextCursor };
}
