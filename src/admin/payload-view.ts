/**
 * Shows a job's payload to a person: JSON pretty-printed, text as text, and
 * anything else (or text that is not valid UTF-8) as a hex dump. Only the
 * first `maxViewBytes` are shown, so a 64 MiB payload never becomes a 64 MiB
 * response.
 */

import type { PayloadView } from './api-types.ts';

export type { PayloadView };

export const maxViewBytes = 64 * 1024;
const hexRowBytes = 16;

export function isJsonType(contentType: string): boolean {
  const essence = mediaType(contentType);
  return essence === 'application/json' || essence.endsWith('+json');
}

function isTextType(contentType: string): boolean {
  const essence = mediaType(contentType);
  return (
    essence.startsWith('text/') ||
    essence.endsWith('+xml') ||
    [
      'application/xml',
      'application/javascript',
      'application/x-www-form-urlencoded',
      'application/x-ndjson',
    ].includes(essence)
  );
}

function mediaType(contentType: string): string {
  return (contentType.split(';')[0] ?? '').trim().toLowerCase();
}

export function viewPayload(payload: Uint8Array, contentType: string): PayloadView {
  const truncated = payload.byteLength > maxViewBytes;
  const shown = truncated ? payload.subarray(0, maxViewBytes) : payload;
  const base = { bytes: payload.byteLength, truncated };
  if (isJsonType(contentType) || isTextType(contentType)) {
    const text = decodeUtf8(shown, truncated);
    if (text !== null) {
      if (isJsonType(contentType) && !truncated) {
        try {
          return { ...base, view: 'json', text: JSON.stringify(JSON.parse(text), null, 2) };
        } catch {
          // Not valid JSON despite its type: show it as it is.
        }
      }
      return { ...base, view: 'text', text };
    }
  }
  return { ...base, view: 'hex', text: hexDump(shown) };
}

/** UTF-8 text, or null when the bytes are not UTF-8. A cut at the end may split one character. */
function decodeUtf8(bytes: Uint8Array, cut: boolean): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes, { stream: cut });
  } catch {
    return null;
  }
}

/** Offset, 16 bytes in hex, and the printable ASCII of each row. */
export function hexDump(bytes: Uint8Array): string {
  const rows: string[] = [];
  for (let offset = 0; offset < bytes.byteLength; offset += hexRowBytes) {
    const row = bytes.subarray(offset, offset + hexRowBytes);
    const hex = Array.from(row, (b) => b.toString(16).padStart(2, '0')).join(' ');
    const ascii = Array.from(row, (b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.')).join('');
    rows.push(`${offset.toString(16).padStart(8, '0')}  ${hex.padEnd(hexRowBytes * 3 - 1)}  ${ascii}`);
  }
  return rows.join('\n');
}
