// A raw HTTP/1.1 client for the security suite: the bytes fetch refuses to send (odd methods, raw
// bytes in the URL, malformed headers, a Content-Length without its body) and the answer as the
// server wrote it, or the fact that it closed the connection instead.
import net from 'node:net';

export interface RawRequest {
  method: string;
  /** the request target, sent byte for byte */
  target: string | Buffer;
  headers?: [string, string | Buffer][];
  body?: string | Buffer;
  /** add Host, Connection: close and (with a body) Content-Length; default true */
  defaults?: boolean;
}

export interface RawAnswer {
  /** 0 when the server closed the connection without answering */
  status: number;
  headers: Record<string, string>;
  text: string;
  json: any;
  /** the server closed the connection (rather than our timeout) */
  closed: boolean;
  elapsedMs: number;
}

export function encodeRequest(baseUrl: string, r: RawRequest): Buffer {
  const host = new URL(baseUrl).host;
  const headers: [string, string | Buffer][] = [...(r.headers ?? [])];
  const has = (name: string) => headers.some(([n]) => n.toLowerCase() === name);
  const body = r.body === undefined ? undefined : Buffer.isBuffer(r.body) ? r.body : Buffer.from(r.body, 'utf8');
  if (r.defaults !== false) {
    if (!has('host')) headers.unshift(['Host', host]);
    if (!has('connection')) headers.push(['Connection', 'close']);
    if (body && !has('content-length') && !has('transfer-encoding'))
      headers.push(['Content-Length', String(body.length)]);
  }
  const parts: Buffer[] = [Buffer.from(`${r.method} `, 'latin1')];
  parts.push(Buffer.isBuffer(r.target) ? r.target : Buffer.from(r.target, 'utf8'));
  parts.push(Buffer.from(' HTTP/1.1\r\n', 'latin1'));
  for (const [name, value] of headers) {
    parts.push(Buffer.from(`${name}: `, 'latin1'), Buffer.isBuffer(value) ? value : Buffer.from(value, 'utf8'));
    parts.push(Buffer.from('\r\n', 'latin1'));
  }
  parts.push(Buffer.from('\r\n', 'latin1'));
  if (body) parts.push(body);
  return Buffer.concat(parts);
}

/** Parses one HTTP/1.1 response from `buf`, skipping 1xx answers; null while incomplete. */
function parseResponse(buf: Buffer, head: boolean, ended: boolean): Omit<RawAnswer, 'closed' | 'elapsedMs'> | null {
  let start = 0;
  for (;;) {
    const end = buf.indexOf('\r\n\r\n', start, 'latin1');
    if (end < 0) return null;
    const lines = buf.subarray(start, end).toString('latin1').split('\r\n');
    const status = Number(/^HTTP\/\d\.\d (\d{3})/.exec(lines[0] ?? '')?.[1] ?? NaN);
    if (Number.isNaN(status)) return null;
    if (status >= 100 && status < 200) {
      start = end + 4;
      continue;
    }
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const i = line.indexOf(':');
      const name = line.slice(0, i).trim().toLowerCase();
      const value = line.slice(i + 1).trim();
      headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
    }
    let rest = buf.subarray(end + 4);
    let bodyBytes: Buffer;
    if (head || status === 204 || status === 304) bodyBytes = Buffer.alloc(0);
    else if (headers['content-length'] !== undefined) {
      const n = Number(headers['content-length']);
      if (rest.length < n) return null;
      bodyBytes = rest.subarray(0, n);
    } else if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
      const chunks: Buffer[] = [];
      for (;;) {
        const lineEnd = rest.indexOf('\r\n', 0, 'latin1');
        if (lineEnd < 0) return null;
        const size = parseInt(rest.subarray(0, lineEnd).toString('latin1'), 16);
        if (Number.isNaN(size)) return null;
        if (rest.length < lineEnd + 2 + size + 2) return null;
        if (size === 0) break;
        chunks.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size));
        rest = rest.subarray(lineEnd + 2 + size + 2);
      }
      bodyBytes = Buffer.concat(chunks);
    } else {
      if (!ended) return null;
      bodyBytes = rest;
    }
    const text = bodyBytes.toString('utf8');
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status, headers, text, json };
  }
}

/**
 * Sends `payload` on a new connection and reads one response. Our side of the connection stays
 * open after writing (so a Content-Length without its body is a client still sending); `closed`
 * tells whether the server closed the connection by itself within `closeWaitMs` of answering.
 */
export function rawExchange(
  baseUrl: string,
  payload: Buffer,
  {
    timeoutMs = 10_000,
    head = false,
    closeWaitMs = 300,
  }: { timeoutMs?: number; head?: boolean; closeWaitMs?: number } = {},
): Promise<RawAnswer> {
  const { hostname, port } = new URL(baseUrl);
  const started = Date.now();
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    let done = false;
    let answeredAt: number | null = null;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      const parsed = parseResponse(Buffer.concat(chunks), head, true);
      socket.destroy();
      resolve({
        ...(parsed ?? { status: 0, headers: {}, text: Buffer.concat(chunks).toString('latin1'), json: undefined }),
        closed,
        elapsedMs: (answeredAt ?? Date.now()) - started,
      });
    };
    let timer = setTimeout(() => finish(false), timeoutMs);
    socket.on('data', (d: Buffer) => {
      chunks.push(d);
      if (answeredAt === null && parseResponse(Buffer.concat(chunks), head, false)) {
        answeredAt = Date.now();
        clearTimeout(timer);
        timer = setTimeout(() => finish(false), closeWaitMs);
      }
    });
    socket.on('end', () => finish(true));
    socket.on('close', () => finish(true));
    socket.on('error', () => finish(true));
    socket.write(payload);
  });
}

export const raw = (baseUrl: string, r: RawRequest, options?: { timeoutMs?: number }) =>
  rawExchange(baseUrl, encodeRequest(baseUrl, r), { ...options, head: r.method === 'HEAD' });
