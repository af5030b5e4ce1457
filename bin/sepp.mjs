#!/usr/bin/env node
// `sepp` from a checkout, run from the TypeScript sources: `npx sepp …` (npm runs the root
// package's bin) and `npm start -- …` both come here. tsx is registered in this process
// rather than started as a wrapper process, so a signal sent to this process (npm start
// forwards SIGTERM and SIGINT to it) reaches the server itself. (`npm start` is
// `exec node bin/sepp.mjs` for the same reason: without exec, the shell npm starts would
// get the signal, die of it, and leave the server running.)
// The single executable (`npm run build` → dist/sepp) needs none of this.
import { register } from 'tsx/esm/api';

// `npm start` runs the server: alone, or with flags (`npm start -- --data-dir d`), it means
// `sepp serve`; with a command (`npm start -- queues --json`), that command. `sepp` alone
// prints the help instead.
const [first] = process.argv.slice(2);
if (process.env.npm_lifecycle_event === 'start' && (first === undefined || first.startsWith('-'))) {
  process.argv.splice(2, 0, 'serve');
}
register();
await import('../src/cli/main.ts');
