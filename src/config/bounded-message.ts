/**
 * How long an error message may be on the wire: a gRPC status message (sent
 * in the trailers, where a client's header-size limit makes a long one stall
 * the call until its deadline), a per-job rejection, the admin API's error
 * JSON. A message that quotes what the caller sent (a 1 MiB name, a thousand
 * unknown setting keys) would otherwise grow with it. The gRPC status
 * mapping (src/rpc/status.ts) and the admin's error JSON
 * (src/admin/http-errors.ts) cut every message to this; the validators that
 * list what they found summarize instead (`… and 995 more`).
 */

/** The longest message sepp answers with, in bytes of UTF-8. */
export const messageBytesMax = 1024;

/** How many items a message lists before it says how many more there are. */
export const listedItemsMax = 5;

/**
 * `text` if it fits in `maxBytes` bytes of UTF-8; else its start (whole
 * characters) with `… (N more bytes)`, the whole no longer than `maxBytes`.
 */
export function boundMessage(text: string, maxBytes = messageBytesMax): string {
  // Fast path: no character takes more than 3 bytes of UTF-8 per UTF-16 unit.
  if (text.length * 3 <= maxBytes) return text;
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return text;
  const suffix = (more: number) => `… (${more} more bytes)`;
  // The suffix of the largest count is the longest one.
  let keep = maxBytes - Buffer.byteLength(suffix(bytes.length));
  // Back up to the start of a character (continuation bytes are 10xxxxxx).
  while (keep > 0 && ((bytes[keep] ?? 0) & 0xc0) === 0x80) keep--;
  return `${bytes.subarray(0, keep).toString('utf8')}${suffix(bytes.length - keep)}`;
}

/**
 * `a, b, c, d, e … and 995 more`: the first `shown` items joined with
 * `separator`, and how many were left out.
 */
export function summarizeList(items: readonly string[], shown = listedItemsMax, separator = ', '): string {
  const listed = items.slice(0, shown).join(separator);
  return items.length > shown ? `${listed} … and ${items.length - shown} more` : listed;
}
