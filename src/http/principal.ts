// The key a request was authenticated with. The guard (plugins/guard.ts) sets it before any
// non-public handler runs; reading it here, rather than with a non-null assertion, turns a route
// that forgot its scope into a 401 instead of a crash.
import type { FastifyRequest } from 'fastify';
import type { Principal } from '../modules/api-keys/authenticator.js';
import { invalidApiKey } from '../shared/errors.js';

export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw invalidApiKey(false);
  return request.principal;
}
