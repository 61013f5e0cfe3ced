import { randomBytes } from 'node:crypto';

/**
 * Request ids: "req_" and 12 random bytes in base64url, cut from a pool of random bytes refilled
 * 4 KiB at a time (one call to the system's random source per 341 ids rather than one per id).
 */
export function requestIds(): () => string {
  const ID_BYTES = 12;
  let pool = Buffer.alloc(0);
  let at = 0;
  return () => {
    if (at + ID_BYTES > pool.length) {
      pool = randomBytes(ID_BYTES * 341);
      at = 0;
    }
    at += ID_BYTES;
    return `req_${pool.toString('base64url', at - ID_BYTES, at)}`;
  };
}
