// Turns a presented bearer key into a principal without touching the database on every request:
// credentials are cached per key id for a short time, and any owner action that changes a key or a
// workspace (revoke, rotate, suspend, resume) sends NOTIFY auth_changed, which empties every
// process's cache at once. While that subscription is down, the cache is bypassed entirely, so a
// revocation can never be missed for longer than one database round trip.
import { timingSafeEqual } from 'node:crypto';
import type { Database } from '../../infra/database.js';
import { apiKeysRepository, type KeyCredentialRow } from './api-keys.repository.js';
import { digestSecret, parseKey } from './key-format.js';
import type { Scope } from '../../shared/scopes.js';

export const AUTH_CHANGED_CHANNEL = 'auth_changed';

/** Read-only: one principal serves every request of a cached key. */
export interface Principal {
  readonly keyId: string;
  readonly workspaceId: string;
  readonly scopes: ReadonlySet<Scope>;
  readonly rateLimitPerMinute: number;
  /** requests in flight at once; null: the deployment's default */
  readonly concurrencyLimit: number | null;
  /** what the key's requests are counted under: its lineage, shared with its rotations */
  readonly quotaId: string;
  readonly workspaceSuspended: boolean;
}

export type AuthOutcome = { ok: true; principal: Principal } | { ok: false };

interface CacheEntry {
  credential: KeyCredentialRow | null;
  /** made once per lookup, not per request (its scope set included) */
  principal: Principal | null;
  secretSha256: Buffer;
  fetchedAt: number;
}

// Compared against when the key id is unknown, so that path costs the same as a wrong secret.
const DUMMY_DIGEST = digestSecret('not-a-real-secret');

export class Authenticator {
  readonly #db: Database;
  readonly #ttlMs: number;
  readonly #cache = new Map<string, CacheEntry>();
  #cacheTrusted = false;
  /** Bumped on every invalidation, so a lookup that raced with one does not cache what it read. */
  #generation = 0;
  #unlisten: (() => Promise<void>) | null = null;
  #retry: NodeJS.Timeout | null = null;
  #closed = false;

  constructor(db: Database, ttlMs: number) {
    this.#db = db;
    this.#ttlMs = ttlMs;
  }

  /** Subscribes to invalidations; until this succeeds the cache stays off. */
  async start(): Promise<void> {
    if (this.#ttlMs === 0 || this.#closed) return;
    try {
      this.#unlisten = await this.#db.listen(
        AUTH_CHANGED_CHANNEL,
        () => this.invalidate(),
        () => this.#subscriptionLost(),
      );
      this.invalidate();
      this.#cacheTrusted = true;
    } catch {
      this.#subscriptionLost();
    }
  }

  #subscriptionLost(): void {
    this.#cacheTrusted = false;
    this.invalidate();
    if (this.#closed || this.#retry) return;
    this.#retry = setTimeout(() => {
      this.#retry = null;
      void this.#unlisten?.().catch(() => undefined);
      this.#unlisten = null;
      void this.start();
    }, 1_000);
    this.#retry.unref();
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#retry) clearTimeout(this.#retry);
    this.#cacheTrusted = false;
    await this.#unlisten?.();
  }

  /** Empties the cache of this process (the owner commands also notify every other process). */
  invalidate(): void {
    this.#generation++;
    this.#cache.clear();
  }

  async authenticate(authorization: string | undefined): Promise<AuthOutcome> {
    const presented = bearerToken(authorization);
    const parsed = presented ? parseKey(presented) : null;
    if (!parsed) return { ok: false };

    const digest = digestSecret(parsed.secret);
    const cached = this.#cached(parsed.id);
    // Only a success is answered from the cache. Every refusal costs one database read and one
    // digest comparison, whatever its reason (unknown id, wrong secret, revoked, expired), so its
    // timing cannot tell whether a key id exists (docs/security.md).
    if (cached && isUsable(cached, digest)) return { ok: true, principal: cached.principal! };
    const entry = await this.#fetch(parsed.id);
    if (!isUsable(entry, digest)) return { ok: false };
    return { ok: true, principal: entry.principal! };
  }

  #cached(id: string): CacheEntry | null {
    const cached = this.#cache.get(id);
    return cached && this.#cacheTrusted && Date.now() - cached.fetchedAt < this.#ttlMs ? cached : null;
  }

  async #fetch(id: string): Promise<CacheEntry> {
    const generation = this.#generation;
    const credential = await apiKeysRepository.credential(this.#db, id);
    const entry: CacheEntry = {
      credential,
      principal: credential ? principalOf(credential) : null,
      secretSha256: credential ? Buffer.from(credential.secret_sha256) : DUMMY_DIGEST,
      fetchedAt: Date.now(),
    };
    // Unknown ids are not cached: random ids would otherwise fill the memory.
    if (credential && this.#cacheTrusted && generation === this.#generation) this.#cache.set(id, entry);
    else this.#cache.delete(id);
    return entry;
  }
}

/** Whether the entry is a live key whose secret has `digest` (compared in constant time). */
function isUsable(entry: CacheEntry, digest: Buffer): boolean {
  const matches = timingSafeEqual(digest, entry.secretSha256);
  const c = entry.credential;
  return !!c && matches && !c.revoked && (c.expires_at_ms === null || c.expires_at_ms > Date.now());
}

function principalOf(c: KeyCredentialRow): Principal {
  return {
    keyId: c.id,
    workspaceId: c.workspace_id,
    scopes: new Set(c.scopes),
    rateLimitPerMinute: c.rate_limit_per_minute,
    concurrencyLimit: c.concurrency_limit,
    quotaId: c.lineage_id,
    workspaceSuspended: c.workspace_status !== 'active',
  };
}

function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const m = /^Bearer +([^\s]+) *$/i.exec(header);
  return m ? m[1]! : null;
}
