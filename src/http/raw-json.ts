/**
 * JSON values that travel byte for byte: a job's payload, an ack's result, a
 * progress document. Parsing them and writing them out again would change
 * them — an integer above 2^53 loses digits, 1e400 becomes null, key order
 * and spacing change — so the request's own text of such a value is kept
 * (`spans`) and a stored JSON document is written into an answer as it is
 * (`RawJson`, `stringifyWithRaw`).
 *
 * `spans` runs only on text JSON.parse has accepted, so it can trust the
 * syntax; it is iterative (no recursion, whatever the nesting).
 */

/** A JSON document to write into an answer as is: its text was checked to be one JSON value. */
export class RawJson {
  constructor(readonly text: string) {}
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The JSON document in `bytes` when `contentType` names JSON and the bytes are
 * one valid JSON value in UTF-8; otherwise null (the caller sends base64).
 */
export function jsonDocument(bytes: Uint8Array, contentType: string | null): RawJson | null {
  if (contentType === null || !isJsonContentType(contentType) || bytes.length === 0) return null;
  let text: string;
  try {
    text = utf8.decode(bytes);
    JSON.parse(text);
  } catch {
    return null;
  }
  return new RawJson(text);
}

/** `application/json`, or any `…/…+json`, with or without parameters. */
export function isJsonContentType(contentType: string): boolean {
  const type = contentType.split(';', 1)[0]?.trim().toLowerCase() ?? '';
  return type === 'application/json' || /^[a-z0-9.+-]+\/[a-z0-9.+-]+\+json$/.test(type);
}

/**
 * JSON.stringify, except that every RawJson in `value` is written as its text.
 * Each call uses its own random marker, so no string in the data can be taken
 * for one.
 */
export function stringifyWithRaw(value: unknown): string {
  const raws: string[] = [];
  // Made when the first RawJson is met: most answers (an enqueue's) have none.
  let marker = '';
  const text = JSON.stringify(value, (_key, v: unknown) => {
    if (v instanceof RawJson) {
      if (marker === '') marker = `\u0000raw:${Math.random().toString(36).slice(2)}:`;
      raws.push(v.text);
      return `${marker}${raws.length - 1}`;
    }
    return v;
  });
  if (raws.length === 0) return text;
  // JSON.stringify writes the marker's NUL as \u0000, inside quotes.
  const quoted = JSON.stringify(marker).slice(1, -1);
  const pattern = new RegExp(`"${quoted.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&')}(\\d+)"`, 'g');
  return text.replace(pattern, (_m, index: string) => raws[Number(index)] ?? 'null');
}

/** Where each member's value of the object starting at `start` lies in `text`, and where the object ends. */
export interface ObjectSpans {
  members: Map<string, { start: number; end: number }>;
  end: number;
}

function skipSpace(text: string, i: number): number {
  let at = i;
  while (at < text.length) {
    const c = text.charCodeAt(at);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) break;
    at++;
  }
  return at;
}

/** The index just past the string starting at `i` (a `"`). */
function skipString(text: string, i: number): number {
  let at = i + 1;
  while (at < text.length) {
    const c = text.charCodeAt(at);
    if (c === 0x5c) at += 2;
    else if (c === 0x22) return at + 1;
    else at++;
  }
  return at;
}

/** The index just past the value starting at `i`. */
export function skipValue(text: string, i: number): number {
  const first = text.charCodeAt(i);
  if (first === 0x22) return skipString(text, i);
  if (first === 0x7b || first === 0x5b) {
    let depth = 0;
    let at = i;
    while (at < text.length) {
      const c = text.charCodeAt(at);
      if (c === 0x22) {
        at = skipString(text, at);
        continue;
      }
      if (c === 0x7b || c === 0x5b) depth++;
      else if (c === 0x7d || c === 0x5d) {
        depth--;
        if (depth === 0) return at + 1;
      }
      at++;
    }
    return at;
  }
  let at = i;
  while (at < text.length && !',}] \t\r\n'.includes(text[at] ?? '')) at++;
  return at;
}

/** The spans of the members of the object at `start` (after whitespace). The text must be valid JSON. */
export function objectSpans(text: string, start: number): ObjectSpans {
  const members = new Map<string, { start: number; end: number }>();
  let at = skipSpace(text, start);
  if (text[at] !== '{') return { members, end: skipValue(text, at) };
  at = skipSpace(text, at + 1);
  while (at < text.length && text[at] !== '}') {
    const keyEnd = skipString(text, at);
    const key = JSON.parse(text.slice(at, keyEnd)) as string;
    at = skipSpace(text, keyEnd) + 1; // past ':'
    const valueStart = skipSpace(text, at);
    const valueEnd = skipValue(text, valueStart);
    // As JSON.parse: the last of duplicate keys wins.
    members.set(key, { start: valueStart, end: valueEnd });
    at = skipSpace(text, valueEnd);
    if (text[at] === ',') at = skipSpace(text, at + 1);
  }
  return { members, end: at + 1 };
}

/** The spans of the elements of the array at `start`. The text must be valid JSON. */
export function arraySpans(text: string, start: number): { start: number; end: number }[] {
  const elements: { start: number; end: number }[] = [];
  let at = skipSpace(text, start);
  if (text[at] !== '[') return elements;
  at = skipSpace(text, at + 1);
  while (at < text.length && text[at] !== ']') {
    const end = skipValue(text, at);
    elements.push({ start: at, end });
    at = skipSpace(text, end);
    if (text[at] === ',') at = skipSpace(text, at + 1);
  }
  return elements;
}
