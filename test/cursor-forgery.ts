// What anyone holding a cursor can do with it: read the sort key it carries, and move it to any other
// key with a check the service accepts, without knowing what the check binds. Lists must read such a
// key as one of their own positions or refuse it (shared/cursor.ts).
import { crc32 } from 'node:zlib';

/** The sort key a cursor carries (its text before the dot, base64url JSON). */
export const keyOf = (cursor: string): string[] =>
  JSON.parse(Buffer.from(cursor.slice(0, cursor.indexOf('.')), 'base64url').toString('utf8'));

/**
 * `cursor` moved to `key`. Its check is the CRC-32 of what it binds followed by its text; a CRC
 * runs backwards as well as forwards, so running it back over the text gives the CRC of the binding
 * alone, and forwards over the new text the check of the moved cursor.
 */
export function rewriteCursor(cursor: string, key: readonly unknown[]): string {
  const dot = cursor.indexOf('.');
  const binding = crcBefore(Number.parseInt(cursor.slice(dot + 1), 16), Buffer.from(cursor.slice(0, dot)));
  const body = Buffer.from(JSON.stringify(key)).toString('base64url');
  return `${body}.${crc32(body, binding).toString(16).padStart(8, '0')}`;
}

// CRC-32 (reflected, polynomial 0xEDB88320) one byte at a time: state = TABLE[(state ^ byte) & 0xff]
// ^ (state >>> 8). The entries' top bytes are all different, so a state's top byte names the entry
// that produced it, and the step can be undone.
const TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
const ENTRY_OF_TOP_BYTE = new Map(TABLE.map((entry, i) => [entry >>> 24, i]));

/** The CRC-32 of a text, given the CRC-32 of that text followed by `tail`. */
function crcBefore(crc: number, tail: Buffer): number {
  let state = ~crc >>> 0;
  for (let j = tail.length - 1; j >= 0; j--) {
    const i = ENTRY_OF_TOP_BYTE.get(state >>> 24)!;
    state = (((state ^ TABLE[i]!) << 8) | ((i ^ tail[j]!) & 0xff)) >>> 0;
  }
  return ~state >>> 0;
}
