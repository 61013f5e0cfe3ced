// A webhook receiver: verifies each delivery's signature, skips an event already processed, applies
// the rest, and answers 2xx only once the event is safely applied (anything else is retried).
//
//   WEBHOOK_SECRET=whsec_… node --import tsx examples/webhook-receiver/receiver.ts --port 4000
//
// Exported as `createReceiver` so it can run inside another program (and in tests).
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import {
  verifyWebhook,
  WebhookVerificationError,
  type WebhookTestMessage,
  type WorkspaceEvent,
} from '../../clients/typescript/src/index.js';

/** Bodies above this are refused unread: an event is a few KiB. */
const MAX_BODY_BYTES = 1024 * 1024;

async function rawBody(req: IncomingMessage): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

export interface ReceiverOptions {
  /** the secret(s) `webhooks create` / `rotate-secret` printed */
  secrets: string[];
  /** applies one event; a throw answers 500 and the delivery is retried */
  apply(event: WorkspaceEvent | WebhookTestMessage): Promise<void>;
  /**
   * Whether an event id was already applied, and the record that it was. Keep them where the
   * applied data lives (the same transaction, ideally): a delivery can arrive more than once.
   */
  seen: { has(id: string): Promise<boolean> | boolean; add(id: string): unknown };
}

export function createReceiver(options: ReceiverOptions): Server {
  return createServer((req, res) => {
    void (async () => {
      if (req.method !== 'POST') return res.writeHead(405).end();
      const body = await rawBody(req);
      if (!body) return res.writeHead(413).end();
      let event: WorkspaceEvent | WebhookTestMessage;
      try {
        // The raw bytes, never JSON parsed and written again: the signature covers them exactly.
        event = verifyWebhook(options.secrets, body, req.headers);
      } catch (err) {
        if (err instanceof WebhookVerificationError) return res.writeHead(401).end();
        throw err;
      }
      if (!(await options.seen.has(event.id))) {
        await options.apply(event);
        await options.seen.add(event.id);
      }
      res.writeHead(204).end();
    })().catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { port: { type: 'string', default: '4000' } } });
  const secrets = (process.env.WEBHOOK_SECRET ?? '').split(',').filter(Boolean);
  if (secrets.length === 0) throw new Error('Set WEBHOOK_SECRET to the secret `webhooks create` printed.');
  const applied = new Set<string>();
  const server = createReceiver({
    secrets,
    seen: applied,
    async apply(event) {
      process.stdout.write(`${event.id} ${event.type}\n`);
    },
  });
  server.listen(Number(values.port), '127.0.0.1');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
