/** Opens a real engine on a real temporary SQLite file, with a fake clock. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '../../src/engine/clock.ts';
import { Engine, type EngineDeps } from '../../src/engine/engine.ts';
import { defaultEngineOptions, type EngineOptions } from '../../src/engine/settings.ts';
import { type Durability, openDataDir } from '../../src/store/open.ts';

export interface TestEngine {
  engine: Engine;
  clock: FakeClock;
  dataDir: string;
  /** Closes the engine and opens the same data directory again (a restart). */
  reopen(): TestEngine;
  /** Closes the engine (if open) and removes the data directory. */
  dispose(): void;
}

export interface TestEngineOptions {
  options?: Partial<EngineOptions>;
  deps?: Partial<EngineDeps>;
  durability?: Durability;
  dataDir?: string;
  clock?: FakeClock;
}

export function openTestEngine(opts: TestEngineOptions = {}): TestEngine {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'sepp-test-'));
  const clock = opts.clock ?? new FakeClock();
  const db = openDataDir(dataDir, { durability: opts.durability ?? 'full' });
  const options = { ...defaultEngineOptions(), ...opts.options };
  let random = 0;
  const engine = new Engine(db, options, {
    clock,
    // Deterministic jitter: a fixed sequence in [0, 1).
    random: () => {
      random = (random * 9301 + 49297) % 233280;
      return random / 233280;
    },
    ...opts.deps,
  });
  let closed = false;
  const close = () => {
    if (!closed) engine.close();
    closed = true;
  };
  return {
    engine,
    clock,
    dataDir,
    reopen() {
      close();
      return openTestEngine({ ...opts, dataDir, clock });
    },
    dispose() {
      close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);
