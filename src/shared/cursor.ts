// Keyset cursors: opaque to clients, tamper-evident (HMAC-SHA256 with the instance's cursor secret)
// and bound to the resource, the workspace and the filters they were issued with. A cursor carries
// the sort key of the last row served, so the next page is one index range scan whatever its depth.
import { createHash, createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import { ApiError } from './errors.js';
import { canonicalJson } from './canonical-json.js';

export type SortKey = readonly (string | number)[];

interface CursorPayload {
  /** resource list the cursor belongs to, e.g. "contacts" */
  r: string;
  /** workspace id */
  w: string;
  /** digest of the filters */
  f: string;
  /** sort key of the last row of the page */
  k: SortKey;
}

export interface CursorScope {
  resource: string;
  workspaceId: string;
  /** every filter that shapes the result set (not the page size) */
  filters: Record<string, unknown>;
}

const MAC_BYTES = 16;

export class CursorCodec {
  readonly #secret: KeyObject;

  constructor(secret: string) {
    this.#secret = createSecretKey(Buffer.from(secret, 'utf8'));
  }

  encode(scope: CursorScope, key: SortKey): string {
    const payload: CursorPayload = { r: scope.resource, w: scope.workspaceId, f: filterDigest(scope.filters), k: key };
    const body = Buffer.from(JSON.stringify(payload), 'utf8').toString('base64url');
    return `${body}.${this.#mac(body).toString('base64url')}`;
  }

  /** The sort key carried by `cursor`, or a 400 invalid_cursor when it was not issued for this scope. */
  decode(scope: CursorScope, cursor: string): SortKey {
    const invalid = () => new ApiError('invalid_cursor', { details: { parameter: 'cursor' } });
    const dot = cursor.indexOf('.');
    if (dot <= 0) throw invalid();
    const body = cursor.slice(0, dot);
    // Compare the signature as text: base64url decoding forgives padding, stray characters and
    // the unused bits of the last one, and only the cursor exactly as issued is valid.
    const mac = Buffer.from(cursor.slice(dot + 1), 'utf8');
    const expected = Buffer.from(this.#mac(body).toString('base64url'), 'utf8');
    if (mac.length !== expected.length || !timingSafeEqual(mac, expected)) throw invalid();
    let payload: CursorPayload;
    try {
      payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as CursorPayload;
    } catch {
      throw invalid();
    }
    if (
      payload.r !== scope.resource ||
      payload.w !== scope.workspaceId ||
      payload.f !== filterDigest(scope.filters) ||
      !Array.isArray(payload.k)
    ) {
      throw invalid();
    }
    return payload.k as SortKey;
  }

  #mac(body: string): Buffer {
    return createHmac('sha256', this.#secret).update(body).digest().subarray(0, MAC_BYTES);
  }
}

/** Digests of the filter sets seen lately, by their canonical JSON: most pages carry one of a few. */
const digests = new Map<string, string>();
const MAX_DIGESTS = 1_000;

function filterDigest(filters: Record<string, unknown>): string {
  const canonical = canonicalJson(filters);
  let digest = digests.get(canonical);
  if (digest === undefined) {
    digest = createHash('sha256').update(canonical).digest('base64url').slice(0, 16);
    if (digests.size >= MAX_DIGESTS) digests.clear();
    digests.set(canonical, digest);
  }
  return digest;
}
