/**
 * The size of a page of any list: what a caller asks for, or the list's default when it
 * asks for none (0 or nothing), within limits.max_page_size.
 */
import { SeppError } from './errors.ts';

/** The page size to read: `requested`, or `defaultSize` (at most `maxPageSize`) for 0 or none. */
export function pageSizeOf(requested: number | undefined, defaultSize: number, maxPageSize: number): number {
  if (requested === undefined || requested === 0) return Math.min(defaultSize, maxPageSize);
  if (!Number.isInteger(requested) || requested < 1 || requested > maxPageSize) {
    throw new SeppError('invalid_argument', pageSizeProblem('page_size', requested, maxPageSize));
  }
  return requested;
}

/** What is wrong with a page size, naming the field as the caller's door does (`limit`, `pageSize`). */
export function pageSizeProblem(field: string, size: number, maxPageSize: number): string {
  return `${field} is ${size}; it must be an integer from 1 to ${maxPageSize} (limits.max_page_size), or 0 for the default`;
}
