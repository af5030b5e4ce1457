/**
 * PLACEHOLDER ENTRY POINT — to be replaced by the real yargs CLI (`serve`, operator
 * commands). It exists so the packaging (build.mjs, the single executable, its smoke
 * test) can be built and proven before the server is. The real CLI keeps these two
 * commands working by calling the same helpers: `buildInfo` for `--version` and
 * `runStoreSelfTest()` and `verifySeaAssets()` for `selftest`, which build.mjs and tests/packaging/sea-smoke.test.ts runs.
 */
import { buildInfo } from '../build-info.ts';
import { runningAsSea, verifySeaAssets } from '../store/sea-assets.ts';
import { runStoreSelfTest } from '../store/selftest.ts';

const usage = 'usage: sepp --version | sepp selftest';

function main(args: readonly string[]): number {
  const [command] = args;
  if (command === '--version' || command === 'version') {
    console.log(`sepp ${buildInfo.version} (${buildInfo.commit})`);
    return 0;
  }
  if (command === 'selftest') {
    const result = runStoreSelfTest();
    console.log(
      `SQLite ${result.sqliteVersion}, journal_mode=${result.journalMode}, addon ${result.nativeBinding}`,
    );
    if (runningAsSea()) {
      const assets = verifySeaAssets();
      console.log(`${assets.count} embedded assets, ${assets.sizeBytes} bytes, sha256 verified`);
    } else {
      console.log('no embedded assets (not running as the single executable)');
    }
    console.log('OK');
    return 0;
  }
  console.error(usage);
  return 2;
}

process.exitCode = main(process.argv.slice(2));
