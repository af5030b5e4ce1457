/**
 * Admin passwords, as the admin routes need them. The format and the scrypt
 * work live in one place, src/config/password-hash.ts (the config validates
 * the same strings): `$scrypt$ln=15,r=8,p=1$<salt>$<hash>`.
 */
import {
  defaultScryptParams,
  formatPasswordHash,
  hashPassword as hashInConfigFormat,
  type PasswordHash,
  parsePasswordHash as parseInConfigFormat,
  type ScryptParams,
} from '../config/password-hash.ts';

export { verifyPassword } from '../config/password-hash.ts';
export { defaultScryptParams, formatPasswordHash, type ScryptParams };

/** Parses a stored hash; null when it is not one (a malformed hash never matches any password). */
export function parsePasswordHash(stored: string): PasswordHash | null {
  const parsed = parseInConfigFormat(stored);
  return parsed.ok ? parsed.value : null;
}

/** Hashes a password for the config (a fresh random salt each time). */
export async function hashPassword(
  password: string,
  params: ScryptParams = defaultScryptParams,
): Promise<string> {
  if (password.length === 0) throw new Error('the password is empty');
  return hashInConfigFormat(password, params);
}
