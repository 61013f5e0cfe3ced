// What routes declare about themselves in `config`, and what the guard attaches to a request.
import type { Principal } from '../modules/api-keys/authenticator.js';
import type { Scope } from '../shared/scopes.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The scope a key must carry; every route that is not public declares one. */
    scope?: Scope;
    /** No API key needed (interface descriptions, health). */
    public?: boolean;
    /** Not counted against any quota (health probes). */
    unmetered?: boolean;
    /** A JSON write: Content-Type application/json and an Idempotency-Key are required. */
    idempotentWrite?: boolean;
    /**
     * A batch: the values of its body's arrays (`items`, or the `ids` and `external_ids` of a batch
     * delete) count as one request per this many against the rate limit.
     */
    itemsPerRequest?: number;
  }
  interface FastifyRequest {
    principal: Principal | null;
  }
}

export {};
