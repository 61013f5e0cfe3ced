// What a request's log line may say of it: the path, with API keys and external ids blotted out.
import type { FastifyServerOptions } from 'fastify';

/**
 * Request log lines carry the path only, with anything shaped like an API key blotted out, the
 * external id of an upsert too (the caller chooses it, and it may be an e-mail address), and any
 * segment shaped like an e-mail address or a phone number (a contact's e-mail sent where an id
 * belongs, on a path no route takes).
 */
export function withSafeSerializers(logger: FastifyServerOptions['logger']): FastifyServerOptions['logger'] {
  if (!logger || typeof logger !== 'object') return logger;
  const req = (r: { method: string; url: string; ip?: string }) => ({
    method: r.method,
    path: loggedPath(r.url),
    remoteAddress: r.ip,
  });
  const serializers = (logger as { serializers?: Record<string, unknown> }).serializers;
  return { ...logger, serializers: { ...serializers, req } };
}

const API_KEY_SHAPE = /wsk_[0-9A-Za-z]+(?:\.|%2e)[0-9A-Za-z]+/gi;
// Everything after /contacts/external/ is the id (it may hold "/"); the router also takes
// percent-encoded letters and repeated slashes, so the path is matched decoded.
const EXTERNAL_ID_TAIL = /(\/contacts\/+external\/).*$/is;

/** A path segment holding an "@" (an e-mail address), or a "+" and digits (a phone number). */
const PERSONAL_SEGMENT = /[^/]*@[^/]*|\+[0-9][^/]*/;
const PERSONAL_SEGMENTS = new RegExp(PERSONAL_SEGMENT.source, 'g');

/**
 * Whether a path may hold something to blot out: a key's prefix, an external id, an e-mail
 * address, a phone number, or an escape.
 */
const MAY_BLOT = /wsk_|external|@|\+|%/i;

/**
 * The path as sent, without its query; when it names an external id, an e-mail address or a phone
 * number (decoded, the way the router reads it), the path decoded with those written as
 * [redacted]. The dot of a key may come percent-encoded (%2E).
 */
function loggedPath(url: string): string {
  const query = url.indexOf('?');
  const raw = query === -1 ? url : url.slice(0, query);
  if (!MAY_BLOT.test(raw)) return raw;
  let decoded = raw;
  if (raw.includes('%')) {
    try {
      decoded = decodeURIComponent(raw);
    } catch {
      // Not decodable: the router refuses it too; matched as sent.
    }
  }
  const path = EXTERNAL_ID_TAIL.test(decoded)
    ? decoded.replace(EXTERNAL_ID_TAIL, '$1[redacted]')
    : PERSONAL_SEGMENT.test(decoded)
      ? decoded
      : raw;
  return path.replace(PERSONAL_SEGMENTS, '[redacted]').replace(API_KEY_SHAPE, 'wsk_[redacted]');
}
