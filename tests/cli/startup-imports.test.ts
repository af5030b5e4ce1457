/**
 * What every CLI command loads before it runs: the modules src/cli/main.ts reaches through
 * static imports (values, not `import type`; a dynamic `import()` loads only when called). No
 * store is among them, so `sepp version`, `sepp --help` and the remote commands do not load
 * SQLite's and PostgreSQL's stores and drivers' code; `sepp serve` imports them when it starts.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { test } from 'node:test';

const root = resolve(import.meta.dirname, '../..');
const staticImport = /^(?:import|export)\s+(?!type\b)(?:[^;]*?\s+from\s+)?'(\.{1,2}\/[^']+)';/gms;

/** Each module reached from `entry`, with the module that imported it first. */
function staticGraph(entry: string): Map<string, string | null> {
  const importedBy = new Map<string, string | null>();
  const visit = (file: string, from: string | null): void => {
    if (importedBy.has(file)) return;
    importedBy.set(file, from);
    // The SDK's generated code is imported as .js and written as .ts.
    const text = readFileSync(file.replace(/\.js$/, '.ts'), 'utf8');
    for (const m of text.matchAll(staticImport)) visit(resolve(dirname(file), m[1] ?? ''), file);
  };
  visit(entry, null);
  return importedBy;
}

test("the CLI's start loads no store: sepp version does not pay for SQLite's and PostgreSQL's code", () => {
  const graph = staticGraph(resolve(root, 'src/cli/main.ts'));
  assert.ok(graph.has(resolve(root, 'src/cli/parser.ts')), `walked ${graph.size} modules`);
  const chain = (file: string): string => {
    const from = graph.get(file);
    return from ? `${chain(from)} -> ${relative(root, file)}` : relative(root, file);
  };
  const stores = [...graph.keys()].filter((f) => /src\/(app-store\.ts|store\/(sqlite|postgres)\/)/.test(f));
  assert.deepEqual(stores.map(chain), [], 'imported at start');
});
