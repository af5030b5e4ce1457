/**
 * Writes docs/admin.md's list of the UI's own pages from the router's list
 * (src/admin/ui-routes.ts), between the `ui-routes` markers, so the docs never
 * drift from the pages that exist (issue 36). Run it after changing the UI's
 * routes (`npx tsx scripts/gen-admin-ui-routes-doc.ts`);
 * tests/admin/static-assets.test.ts fails while the committed file differs.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { uiRoutePaths } from '../src/admin/ui-routes.ts';

export const docsPath = new URL('../docs/admin.md', import.meta.url).pathname;
const start = '<!-- ui-routes: written by scripts/gen-admin-ui-routes-doc.ts from src/admin/ui-routes.ts -->';
const end = '<!-- /ui-routes -->';

/** The router's paths as the docs write them: a variable part as NAME or ID. */
function listed(): string {
  return uiRoutePaths
    .map((path) => `\`${path.replace(/:([a-z]+)/g, (_, v: string) => v.toUpperCase())}\``)
    .join(', ');
}

/** docs/admin.md as it should be: `text` with the list between the markers written anew. */
export function withRoutes(text: string): string {
  const from = text.indexOf(start);
  const to = text.indexOf(end);
  if (from < 0 || to < from) throw new Error(`docs/admin.md: no ${start} … ${end} markers`);
  const paragraph = [
    `The UI's own pages (${listed()}) answer with the UI, so a bookmark or a reload works;`,
    "any other path that is not one of the UI's files is a 404 with a JSON error",
    '(`{"error": {"code": "not_found", …}}`), so a probe of a wrong path never looks healthy.',
  ].join('\n');
  return `${text.slice(0, from + start.length)}\n${paragraph}\n${text.slice(to)}`;
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  writeFileSync(docsPath, withRoutes(readFileSync(docsPath, 'utf8')));
  console.log(`wrote ${docsPath}`);
}
