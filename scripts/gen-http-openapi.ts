/**
 * Writes docs/http-openapi.json: the HTTP API's OpenAPI 3.1 document, built
 * from the same route declarations the server dispatches to. Run it after
 * changing src/http/ (`npx tsx scripts/gen-http-openapi.ts`);
 * tests/http/openapi.test.ts fails while the committed file differs.
 */
import { writeFileSync } from 'node:fs';
import { buildInfo } from '../src/build-info.ts';
import { openApiDocument } from '../src/http/index.ts';

export const committedPath = new URL('../docs/http-openapi.json', import.meta.url).pathname;

export function generatedText(): string {
  return `${JSON.stringify(openApiDocument(buildInfo.version), null, 2)}\n`;
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  writeFileSync(committedPath, generatedText());
  console.log(`wrote ${committedPath}`);
}
