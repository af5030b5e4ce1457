/** Minimal reader for systemd unit files, enough for the packaging tests. */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const unitPath = fileURLToPath(new URL('../../packaging/sepp.service', import.meta.url));

/** Every `Key=value` directive, by key, values in file order (a key may repeat). */
export function readUnitDirectives(text = readFileSync(unitPath, 'utf8')): Map<string, string[]> {
  const directives = new Map<string, string[]>();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';') || line.startsWith('[')) continue;
    const eq = line.indexOf('=');
    if (eq < 0) throw new Error(`not a directive: ${line}`);
    const key = line.slice(0, eq).trim();
    directives.set(key, [...(directives.get(key) ?? []), line.slice(eq + 1).trim()]);
  }
  return directives;
}
