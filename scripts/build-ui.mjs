#!/usr/bin/env node
// Builds the admin UI (ui/) into ui/dist/: one JS and one CSS bundle named by content
// hash (so the server may cache them forever), index.html pointing at them, and the
// files of ui/public. No inline script or style is emitted: the server's CSP forbids them.
// Usage: node scripts/build-ui.mjs [--if-stale]
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { basename, join, relative } from 'node:path';
import { build } from 'esbuild';

const root = new URL('..', import.meta.url).pathname;
export const uiDir = join(root, 'ui');
export const distDir = join(uiDir, 'dist');

function newestMtimeMs(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(stat.mtimeMs, ...readdirSync(path).map((name) => newestMtimeMs(join(path, name))));
}

/** True when ui/dist is missing or older than any of its sources (or this script). */
export function uiIsStale() {
  const built = join(distDir, 'index.html');
  if (!existsSync(built)) return true;
  const sources = [
    join(uiDir, 'src'),
    join(uiDir, 'public'),
    join(uiDir, 'index.html'),
    // The one server module the UI's bundle takes values from (the audit log's actions).
    join(root, 'src/admin/audit-actions.ts'),
    new URL(import.meta.url).pathname,
  ];
  return Math.max(...sources.map(newestMtimeMs)) > statSync(built).mtimeMs;
}

export async function buildUi() {
  rmSync(distDir, { recursive: true, force: true });
  mkdirSync(join(distDir, 'assets'), { recursive: true });
  const result = await build({
    entryPoints: [join(uiDir, 'src/main.tsx')],
    bundle: true,
    outdir: join(distDir, 'assets'),
    entryNames: 'app-[hash]',
    format: 'esm',
    platform: 'browser',
    target: ['chrome110', 'firefox115', 'safari16'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    minify: true,
    legalComments: 'none',
    metafile: true,
    logLevel: 'warning',
  });
  const outputs = Object.entries(result.metafile.outputs);
  const entry = outputs.find(([, output]) => output.entryPoint !== undefined);
  if (entry === undefined || entry[1].cssBundle === undefined)
    throw new Error('esbuild produced no JS or CSS bundle');
  const href = (file) => `/${relative(distDir, join(root, file))}`;
  const html = readFileSync(join(uiDir, 'index.html'), 'utf8')
    .replace('{{js}}', href(entry[0]))
    .replace('{{css}}', href(entry[1].cssBundle));
  cpSync(join(uiDir, 'public'), distDir, { recursive: true });
  writeFileSync(join(distDir, 'index.html'), html);
  const files = outputs.map(([file, output]) => `${basename(file)} ${(output.bytes / 1024).toFixed(1)} KiB`);
  return { files };
}

if (process.argv[1] && import.meta.url.endsWith(basename(process.argv[1]))) {
  if (process.argv.includes('--if-stale') && !uiIsStale()) {
    // stderr: `npm start --silent -- queues --json` runs this first, and its stdout must stay JSON.
    console.error('ui/dist is up to date');
  } else {
    const { files } = await buildUi();
    console.error(`built ui/dist: ${files.join(', ')}`);
  }
}
