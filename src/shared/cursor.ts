// Keyset cursors: opaque to clients, tamper-evident (HMAC-SHA256 with the instance's cursor secret)
// and bound to the resource, the workspace and the filters they were issued with. A cursor carries
// the sort key of the last row served, so the next page is one index range scan whatever its depth.
// The cursor itself holds only that key; what it is bound to is signed with it, not sent with it.
import { createHash, createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import { ApiError } from './errors.js';
import { canonicalJson } from './canonical-json.js';

/** The sort key of the last row of a page: its values as text (a timestamp, an id). */
export type SortKey = readonly string[];

export interface CursorScope {
  resource: string;
  workspaceId: string;
  /**
   * every filter that shapes the result set (not the page size), one spelling for every spelling
   * that selects the same rows (an instant, whatever its offset)
   */
  filters: Record<string, unknown>;
  /**
   * the filters as the request spelled them, when they differ from `filters`: cursors issued while
   * lists bound the spelling itself are bound to these, and are still followed
   */
  filtersAsSent?: Record<string, unknown>;
}

/**
 * A cursor of the earlier form: the binding travelled in the payload, and the signature covered the
 * payload alone. Still accepted, so that a walk under way when a deployment changes form goes on.
 */
interface EarlierPayload {
  /** resource list the cursor belongs to, e.g. "contacts" */
  r: string;
  /** workspace id */
  w: string;
  /** digest of the filters */
  f: string;
  /** sort key of the last row of the page */
  k: unknown;
}

const MAC_BYTES = 16;

export class CursorCodec {
  readonly #secret: KeyObject;

  constructor(secret: string) {
    this.#secret = createSecretKey(Buffer.from(secret, 'utf8'));
  }

  /** `base64url(JSON of the sort key)` `.` `base64url(MAC of the scope and that text)` */
  encode(scope: CursorScope, key: SortKey): string {
    const body = Buffer.from(JSON.stringify(key), 'utf8').toString('base64url');
    return `${body}.${this.#mac(scope, body)}`;
  }

  /** The sort key carried by `cursor`, or a 400 invalid_cursor when it was not issued for this scope. */
  decode(scope: CursorScope, cursor: string): SortKey {
    const dot = cursor.indexOf('.');
    if (dot <= 0) throw invalidCursor();
    const body = cursor.slice(0, dot);
    const mac = cursor.slice(dot + 1);
    let payload = this.#payload(scope, body, mac);
    if (payload === undefined && scope.filtersAsSent) {
      payload = this.#payload({ ...scope, filters: scope.filtersAsSent }, body, mac);
    }
    if (!isSortKey(payload)) throw invalidCursor();
    return payload;
  }

  /** What `body` carries when `mac` signs it for `scope`, in either form; undefined otherwise. */
  #payload(scope: CursorScope, body: string, mac: string): unknown {
    if (sameText(mac, this.#mac(scope, body))) return parsed(body);
    if (sameText(mac, this.#earlierMac(body))) return bound(parsed(body), scope);
    return undefined;
  }

  // The scope's parts are joined by line feeds, which none of them can hold (a canonical JSON
  // escapes its own), so two different scopes never sign the same text.
  #mac(scope: CursorScope, body: string): string {
    return createHmac('sha256', this.#secret)
      .update(`${scope.resource}\n${scope.workspaceId}\n${canonicalJson(scope.filters)}\n${body}`)
      .digest()
      .subarray(0, MAC_BYTES)
      .toString('base64url');
  }

  #earlierMac(body: string): string {
    return createHmac('sha256', this.#secret).update(body).digest().subarray(0, MAC_BYTES).toString('base64url');
  }
}

/** The answer to a cursor that was not issued for the request, or names no position of its list. */
export function invalidCursor(): ApiError {
  return new ApiError('invalid_cursor', { details: { parameter: 'cursor' } });
}

// Only the service signs cursors, and every sort key it signs is one; checked all the same, so
// that no signed text can reach a query as anything but a list of strings.
function isSortKey(value: unknown): value is SortKey {
  return Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === 'string');
}

/**
 * Compared as text: base64url decoding forgives padding, stray characters and the unused bits of
 * the last one, and only the cursor exactly as issued is valid.
 */
function sameText(presented: string, expected: string): boolean {
  const a = Buffer.from(presented, 'utf8');
  const b = Buffer.from(expected, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

function parsed(body: string): unknown {
  try {
    return JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
}

/** The sort key of a cursor of the earlier form when it was issued for `scope`. */
function bound(payload: unknown, scope: CursorScope): unknown {
  const p = payload as Partial<EarlierPayload> | null;
  if (p === null || typeof p !== 'object') return undefined;
  const issuedForScope =
    p.r === scope.resource &&
    p.w === scope.workspaceId &&
    p.f === createHash('sha256').update(canonicalJson(scope.filters)).digest('base64url').slice(0, 16);
  return issuedForScope ? p.k : undefined;
}
