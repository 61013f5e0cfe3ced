// One outbound webhook request. The URL is the workspace owner's, not the API caller's, but a
// process inside a private network must still not be turned into a probe of it: WEBHOOK_TARGETS
// decides which addresses may be reached, and it is enforced on the address the connection is
// actually made to (a custom DNS lookup), so a name that resolves to a private address — at
// creation or later, as in DNS rebinding — is refused all the same. No redirect is followed (a 3xx
// is a failed attempt), the whole attempt has a time limit, and at most 64 KiB of the answer is read.
// Connections are kept open between attempts to the same receiver (a few seconds at most), so a
// backlog does not pay a connection per event; the address check holds for each new connection.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { WebhookTargetPolicy } from '../../config.js';

/** How an attempt ended; the label of wsapi_webhook_deliveries_total. */
export type AttemptOutcome = 'acked' | 'failed' | 'timeout' | 'unreachable' | 'refused';

export interface AttemptResult {
  outcome: AttemptOutcome;
  /** the receiver's status, when it answered */
  status: number | null;
  /** why it failed, in words for the owner (never a secret, never the body) */
  error: string | null;
  durationMs: number;
}

export interface OutboundRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  targets: WebhookTargetPolicy;
}

export const USER_AGENT = 'workspace-public-api-webhooks/1.0 (+https://www.standardwebhooks.com)';
const MAX_RESPONSE_BYTES = 64 * 1024;
/**
 * How long a connection waits unused for the next attempt. Under the 5 s after which common servers
 * (Node.js's among them) close an idle connection, so the receiver seldom closes one just as an
 * attempt starts on it; when it does, the attempt is made again at once on a new connection.
 */
const IDLE_CONNECTION_MS = 4_000;
/** Idle connections kept per receiver (host and port). */
const IDLE_CONNECTIONS_PER_RECEIVER = 16;
const agentOptions = {
  keepAlive: true,
  maxFreeSockets: IDLE_CONNECTIONS_PER_RECEIVER,
  timeout: IDLE_CONNECTION_MS,
  scheduling: 'lifo' as const,
};
const agents = { 'http:': new HttpAgent(agentOptions), 'https:': new HttpsAgent(agentOptions) };

/**
 * The only IPv6 addresses a public target has: global unicast (2000::/3) that ipaddr.js does not
 * name a special range, less the documentation range 3fff::/20 (RFC 9637), which it does not know.
 */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');
const DOCUMENTATION_V6 = ipaddr.parseCIDR('3fff::/20');

/**
 * Why `address` may not be reached under `policy`, or null when it may. An allow-list: an IPv4
 * address must be plain unicast, an IPv6 address global unicast; every special range (private,
 * shared, link-local and so cloud metadata, reserved, multicast, documentation, benchmarking) is
 * refused, and so is every IPv6 form that carries an IPv4 address it could reach through a
 * translator or tunnel (6to4, Teredo, NAT64 in both prefixes, SIIT, IPv4-compatible), whatever
 * that address. An IPv4-mapped address (::ffff:a.b.c.d) is the IPv4 address it maps.
 */
export function refusalOf(address: string, policy: WebhookTargetPolicy): string | null {
  if (policy === 'any') return null;
  if (!ipaddr.isValid(address)) return `${address} is not an IP address`;
  let ip = ipaddr.parse(address);
  if (ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress()) ip = (ip as ipaddr.IPv6).toIPv4Address();
  const range = ip.range();
  if (range === 'loopback') {
    return policy === 'public+loopback' ? null : `${address} is a loopback address (WEBHOOK_TARGETS=${policy})`;
  }
  const isPublic =
    range === 'unicast' && (ip.kind() === 'ipv4' || (ip.match(GLOBAL_UNICAST_V6) && !ip.match(DOCUMENTATION_V6)));
  return isPublic ? null : `${address} is not a public address (WEBHOOK_TARGETS=${policy})`;
}

export class TargetRefused extends Error {}

/**
 * The endpoint URL as it will be requested, or a reason to refuse it: http or https only, no
 * credentials in it (they would show in `webhooks list`), and an address literal must be allowed.
 */
export function checkTargetUrl(text: string, policy: WebhookTargetPolicy): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new TargetRefused(`"${text}" is not a URL.`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TargetRefused(`The URL must be http or https, not ${url.protocol.replace(':', '')}.`);
  }
  if (url.username || url.password) {
    throw new TargetRefused('The URL must not carry credentials: receivers verify the signature instead.');
  }
  if (text.length > 2048) throw new TargetRefused('The URL is longer than 2048 characters.');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    const refusal = refusalOf(host, policy);
    if (refusal) throw new TargetRefused(`The URL's address is refused: ${refusal}.`);
  }
  return url;
}

/** DNS lookup that fails for any address the policy refuses (checked where the socket connects). */
function guardedLookup(policy: WebhookTargetPolicy): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 0);
      const refused = addresses.map((a) => refusalOf(a.address, policy)).find((r) => r !== null);
      if (refused) return callback(Object.assign(new TargetRefused(refused), { code: 'ETARGETREFUSED' }), '', 0);
      if (options.all) return callback(null, addresses);
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '', 0);
      callback(null, first.address, first.family);
    });
  };
}

/** Sends one request and reports how it went; never throws. */
export async function sendOnce(req: OutboundRequest): Promise<AttemptResult> {
  const started = performance.now();
  let url: URL;
  try {
    url = checkTargetUrl(req.url, req.targets);
  } catch (err) {
    return { outcome: 'refused', status: null, error: (err as Error).message, durationMs: 0 };
  }
  const first = await sendOn(url, req, started, true);
  // A kept connection the receiver closed just as the request went out: nothing reached it.
  return first === 'closed by the receiver' ? ((await sendOn(url, req, started, false)) as AttemptResult) : first;
}

function sendOn(
  url: URL,
  req: OutboundRequest,
  started: number,
  mayReuse: boolean,
): Promise<AttemptResult | 'closed by the receiver'> {
  const done = (outcome: AttemptOutcome, status: number | null, error: string | null): AttemptResult => ({
    outcome,
    status,
    error,
    durationMs: Math.round(performance.now() - started),
  });
  return new Promise((resolve) => {
    let settled = false;
    /** the status, once the answer's head has arrived: from then on only it counts */
    let answered: number | null = null;
    const verdict = (status: number) =>
      status >= 200 && status < 300
        ? done('acked', status, null)
        : done(
            'failed',
            status,
            status >= 300 && status < 400 ? `redirect (${status}) not followed` : `HTTP ${status}`,
          );
    /** `keep`: the answer was read to its end, and the connection may serve the next attempt */
    const finish = (result: AttemptResult | 'closed by the receiver', keep = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (!keep) request.destroy();
      resolve(result);
    };
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const request = send(
      url,
      {
        method: 'POST',
        headers: {
          ...req.headers,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(req.body)),
          'user-agent': USER_AGENT,
        },
        agent: mayReuse ? agents[url.protocol as 'http:' | 'https:'] : false,
        lookup: guardedLookup(req.targets),
      },
      (res: IncomingMessage) => {
        const status = res.statusCode ?? 0;
        answered = status;
        // Only the status counts; the answer is read (up to the cap) so the receiver is not cut
        // off mid-write, and the connection is kept for the next attempt once it is read whole.
        let read = 0;
        res.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > MAX_RESPONSE_BYTES) finish(verdict(status));
        });
        res.on('end', () => finish(verdict(status), true));
        res.on('error', () => finish(verdict(status)));
      },
    );
    const timer = setTimeout(
      () =>
        finish(answered === null ? done('timeout', null, `no answer within ${req.timeoutMs} ms`) : verdict(answered)),
      req.timeoutMs - (performance.now() - started),
    );
    request.on('error', (err: Error & { code?: string }) => {
      if (err instanceof TargetRefused || err.code === 'ETARGETREFUSED') finish(done('refused', null, err.message));
      else if (request.reusedSocket && answered === null && (err.code === 'ECONNRESET' || err.code === 'EPIPE'))
        finish('closed by the receiver');
      else finish(done('unreachable', null, err.code ? `${err.code}: ${err.message}` : err.message));
    });
    request.end(req.body);
  });
}
