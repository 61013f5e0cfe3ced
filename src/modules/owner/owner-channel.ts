// The embedded store lives inside the server process, and PGlite data may not be opened by two
// processes at once. So while an embedded server runs, the owner CLI hands its commands to that
// server over a Unix socket that only the owner's account can open (mode 0600, never a TCP port),
// and the server runs them against its own store. On PostgreSQL the CLI talks to the database
// directly and this channel is not used.
import { createHash } from 'node:crypto';
import { chmodSync, realpathSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isOwnerCommand, OwnerError, runOwnerCommand, type OwnerContext } from './owner.service.js';

const MAX_REQUEST_BYTES = 1024 * 1024;

/** A short path (socket paths are limited to ~100 bytes) derived from the data directory. */
export function ownerSocketPath(dataDir: string): string {
  let real = dataDir;
  try {
    real = realpathSync(dataDir);
  } catch {
    // not created yet: the configured path names it
  }
  const id = createHash('sha256').update(real).digest('hex').slice(0, 16);
  return join(tmpdir(), `workspace-api-${id}.sock`);
}

export async function startOwnerChannel(
  socketPath: string,
  ctx: OwnerContext,
  afterCommand: () => void,
): Promise<() => Promise<void>> {
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_REQUEST_BYTES) req.destroy();
      else chunks.push(c);
    });
    req.on('end', () => {
      void (async () => {
        const name = (req.url ?? '').replace(/^\//, '');
        let status = 200;
        let body: unknown;
        try {
          if (req.method !== 'POST' || !isOwnerCommand(name)) throw new OwnerError(`Unknown owner command ${name}.`);
          const input: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
          body = { result: await runOwnerCommand(ctx, name, input) };
          afterCommand();
        } catch (err) {
          status = err instanceof OwnerError ? 400 : 500;
          body = { error: err instanceof OwnerError ? err.message : 'The server could not run the command.' };
        }
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      })();
    });
  });
  rmSync(socketPath, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });
  chmodSync(socketPath, 0o600);
  return () =>
    new Promise<void>((resolve) => {
      server.close(() => {
        rmSync(socketPath, { force: true });
        resolve();
      });
    });
}

export class OwnerChannelUnavailable extends Error {}

export function callOwnerChannel(socketPath: string, command: string, input: unknown): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { socketPath, path: `/${command}`, method: 'POST', headers: { 'content-type': 'application/json' } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          try {
            const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { result?: unknown; error?: string };
            if (body.error !== undefined) reject(new OwnerError(body.error));
            else resolve(body.result);
          } catch (err) {
            reject(err instanceof Error ? err : new Error(String(err)));
          }
        });
      },
    );
    req.on('error', (err) => reject(new OwnerChannelUnavailable(err.message)));
    req.end(JSON.stringify(input));
  });
}
