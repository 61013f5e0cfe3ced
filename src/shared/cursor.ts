// Keyset cursors: opaque to clients and bound to the resource, the workspace and the filters they
// were issued with. A cursor carries the sort key of the last row served, so the next page is one
// index range scan whatever its depth, and a check of that key together with what it is bound to,
// which it does not carry: a cursor altered, or sent to another list, workspace or set of filters,
// is refused with invalid_cursor.
//
// The check is a CRC-32, not a signature. A cursor can only say where a page of the caller's own
// list starts, which `updated_after` lets a client choose anyway: every query is bound to the key's
// workspace and scopes by the request, never by the cursor, and a sort key is read as a position of
// its list (a date-time, an id of the list's kind) before any query. An HMAC protected nothing more
// and was the largest share of the CPU a first page costs beyond a bare route (docs/performance.md).
import { createHash, createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import { crc32 } from 'node:zlib';
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

/** The check's length: a CRC-32 in 8 lower-case hex digits. The signed forms' MACs are longer. */
const CHECK_LENGTH = 8;

export class CursorCodec {
  readonly #signedForms: SignedForms;

  /** `secret`: the key that signed the cursors of the earlier forms, which are still followed. */
  constructor(secret: string) {
    this.#signedForms = new SignedForms(secret);
  }

  encode(scope: CursorScope, key: SortKey): string {
    return encodeCursor(scope, key);
  }

  /** The sort key carried by `cursor`, or a 400 invalid_cursor when it was not issued for this scope. */
  decode(scope: CursorScope, cursor: string): SortKey {
    const dot = cursor.indexOf('.');
    if (dot <= 0) throw invalidCursor();
    const body = cursor.slice(0, dot);
    const check = cursor.slice(dot + 1);
    let payload = this.#payload(scope, body, check);
    if (payload === undefined && scope.filtersAsSent) {
      payload = this.#payload({ ...scope, filters: scope.filtersAsSent }, body, check);
    }
    if (!isSortKey(payload)) throw invalidCursor();
    return payload;
  }

  /** What `body` carries when `check` vouches for it in `scope`, in any form; undefined otherwise. */
  #payload(scope: CursorScope, body: string, check: string): unknown {
    if (check.length === CHECK_LENGTH) return check === checkOf(scope, body) ? parsed(body) : undefined;
    return this.#signedForms.payload(scope, body, check);
  }
}

/** `base64url(JSON of the sort key)` `.` `check of the scope and that text`: no secret needed. */
export function encodeCursor(scope: CursorScope, key: SortKey): string {
  const body = Buffer.from(JSON.stringify(key), 'utf8').toString('base64url');
  return `${body}.${checkOf(scope, body)}`;
}

// The scope's parts are joined by line feeds, which none of them can hold (a canonical JSON escapes
// its own), so two different scopes never check the same text.
function boundText(scope: CursorScope, body: string): string {
  return `${scope.resource}\n${scope.workspaceId}\n${canonicalJson(scope.filters)}\n${body}`;
}

function checkOf(scope: CursorScope, body: string): string {
  return crc32(boundText(scope, body)).toString(16).padStart(CHECK_LENGTH, '0');
}

/**
 * Cursors of the signed forms, still followed so that a walk under way when a deployment changes
 * form goes on: `body.MAC` with the MAC over the scope and the body as the check covers them now,
 * and the earlier form, whose binding travelled in the payload and whose MAC covered the payload.
 */
class SignedForms {
  readonly #secret: KeyObject;

  constructor(secret: string) {
    this.#secret = createSecretKey(Buffer.from(secret, 'utf8'));
  }

  payload(scope: CursorScope, body: string, mac: string): unknown {
    if (sameText(mac, this.#mac(boundText(scope, body)))) return parsed(body);
    if (sameText(mac, this.#mac(body))) return bound(parsed(body), scope);
    return undefined;
  }

  #mac(text: string): string {
    return createHmac('sha256', this.#secret).update(text).digest().subarray(0, 16).toString('base64url');
  }
}

/** The answer to a cursor that was not issued for the request, or names no position of its list. */
export function invalidCursor(): ApiError {
  return new ApiError('invalid_cursor', { details: { parameter: 'cursor' } });
}

// Anyone can write a cursor whose check holds: only a list of strings reaches the list, which reads
// it as one of its positions or refuses it (shared/pagination.ts).
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

/** The sort key of a cursor of the earliest form when it was issued for `scope`. */
interface EarliestPayload {
  /** resource list the cursor belongs to, e.g. "contacts" */
  r: string;
  /** workspace id */
  w: string;
  /** digest of the filters */
  f: string;
  /** sort key of the last row of the page */
  k: unknown;
}

function bound(payload: unknown, scope: CursorScope): unknown {
  const p = payload as Partial<EarliestPayload> | null;
  if (p === null || typeof p !== 'object') return undefined;
  const issuedForScope =
    p.r === scope.resource &&
    p.w === scope.workspaceId &&
    p.f === createHash('sha256').update(canonicalJson(scope.filters)).digest('base64url').slice(0, 16);
  return issuedForScope ? p.k : undefined;
}
