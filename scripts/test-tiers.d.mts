// Types for test-tiers.mjs, so tests can import it under strict TypeScript.
export type Tier = 'fast' | 'system';
export const tiers: readonly Tier[];
/** What each system-tier file starts, by its path relative to the repository. */
export const systemTier: Readonly<Record<string, string>>;
/** Fast-tier files that run in a process of their own, with why. */
export const runsAlone: Readonly<Record<string, string>>;
export function tierOf(file: string): Tier;
export function needsBundle(file: string): boolean;
export function needsExecutable(file: string): boolean;
export function needsSdkPackage(file: string): boolean;
export function startsChromium(file: string): boolean;
