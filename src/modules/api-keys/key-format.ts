// API key format: wsk_<id>.<secret><checksum>
//   id        16 base62 characters: public, names the key in lists and logs
//   secret    40 base62 characters (~238 bits), shown once, stored only as a SHA-256 digest
//   checksum   6 base62 characters of CRC-32 over everything before it, so secret scanners (and this
//             service, before any lookup) can tell a real key from a typo or a random string offline
import { hash, randomInt } from 'node:crypto';
import { crc32 } from 'node:zlib';

export const KEY_PREFIX = 'wsk';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const ID_LENGTH = 16;
const SECRET_LENGTH = 40;
const CHECKSUM_LENGTH = 6;
const KEY_PATTERN = new RegExp(
  `^${KEY_PREFIX}_([0-9A-Za-z]{${ID_LENGTH}})\\.([0-9A-Za-z]{${SECRET_LENGTH}})([0-9A-Za-z]{${CHECKSUM_LENGTH}})$`,
);

function randomBase62(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += BASE62[randomInt(BASE62.length)];
  return out;
}

function checksum(text: string): string {
  let n = crc32(text);
  let out = '';
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

export interface IssuedKey {
  id: string;
  /** the full key, to show once */
  key: string;
  secretSha256: Buffer;
}

export function issueKey(): IssuedKey {
  const id = randomBase62(ID_LENGTH);
  const secret = randomBase62(SECRET_LENGTH);
  const body = `${KEY_PREFIX}_${id}.${secret}`;
  return { id, key: body + checksum(body), secretSha256: digestSecret(secret) };
}

export function digestSecret(secret: string): Buffer {
  // One-shot: a third of the cost of a Hash object, on every authenticated request.
  return hash('sha256', secret, 'buffer');
}

/** Splits a presented key into id and secret; null when its shape or checksum is wrong. */
export function parseKey(presented: string): { id: string; secret: string } | null {
  const m = KEY_PATTERN.exec(presented);
  if (!m) return null;
  const [, id, secret, sum] = m as unknown as [string, string, string, string];
  if (checksum(`${KEY_PREFIX}_${id}.${secret}`) !== sum) return null;
  return { id, secret };
}
