// Runs the service: open the store, migrate, build the app, listen; on SIGTERM or SIGINT stop
// taking requests, let those in flight finish, flush what is buffered and release the store.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { buildApp } from './app.js';
import type { Config } from './config.js';
import { openStore } from './infra/store.js';
import { GENERATED_DATABASE_CODE } from './modules/resources.js';
import { ownerSocketPath, startOwnerChannel } from './modules/owner/owner-channel.js';
import { ownerCommands, type OwnerContext } from './modules/owner/owner.service.js';
import { workspacesRepository } from './modules/workspaces/workspaces.repository.js';
import { SCOPES } from './shared/scopes.js';

export interface RunningServer {
  url: string;
  stop(): Promise<void>;
}

export async function startServer(config: Config): Promise<RunningServer> {
  const store = await openStore(config, { code: GENERATED_DATABASE_CODE });
  const ownerContext: OwnerContext = {
    db: store.db,
    defaultRateLimitPerMinute: config.defaultRateLimitPerMinute,
    webhooks: { timeoutMs: config.webhooks.timeoutMs, targets: config.webhooks.targets },
  };
  // Log lines go to standard output without blocking on it: while one write is in flight the next
  // lines gather, and under load one write carries many of them (a synchronous write would be a
  // system call per request). pino writes what is buffered before the process exits.
  const logger = { level: config.logLevel, stream: pino.destination({ dest: 1, sync: false }) };
  const built = await buildApp(config, store.db, { logger });
  const log = built.app.log;

  let closeOwnerChannel: (() => Promise<void>) | null = null;
  if (store.db.kind === 'embedded') {
    if (config.demoOnFirstStart && (await workspacesRepository.count(store.db)) === 0) {
      await createDemo(ownerContext, config);
    }
    closeOwnerChannel = await startOwnerChannel(ownerSocketPath(config.dataDir), ownerContext, () =>
      built.services.authenticator.invalidate(),
    );
  }

  const url = await built.app.listen({ port: config.port, host: config.host });
  log.info({ store: store.db.kind, url }, 'workspace public api listening');

  let stopping: Promise<void> | null = null;
  const stop = () =>
    (stopping ??= (async () => {
      const force = setTimeout(() => {
        log.error('graceful shutdown took too long; exiting');
        process.exit(1);
      }, config.shutdownGraceMs);
      force.unref();
      await closeOwnerChannel?.();
      await built.close();
      await store.close();
      clearTimeout(force);
    })());
  return { url, stop };
}

/** First start of the embedded store: a workspace with sample data and a key to try it with. */
async function createDemo(ctx: OwnerContext, config: Config): Promise<void> {
  const ws = await ownerCommands.createWorkspace(ctx, { name: 'Demo workspace', timezone: 'America/Sao_Paulo' });
  await ownerCommands.seed(ctx, { workspaceId: ws.id });
  const key = await ownerCommands.createKey(ctx, { workspaceId: ws.id, name: 'demo', scopes: [...SCOPES] });
  const base = `http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${config.port}`;
  const summary = `Demo workspace created (${ws.id}) with sample contacts, appointments, conversations and more.`;
  if (process.stdout.isTTY) {
    process.stdout.write(
      [
        '',
        summary,
        'Demo API key, shown this once (manage keys with bin/workspace-api keys ...):',
        `  ${key.key}`,
        'Try:',
        `  curl -s '${base}/v1/contacts?limit=2' -H 'Authorization: Bearer ${key.key}'`,
        '',
        '',
      ].join('\n'),
    );
  } else {
    // Not a terminal (a service manager, CI): keep the secret out of captured logs. The file holds
    // the key alone, so `$(cat file)` is the key and nothing else.
    const file = join(config.dataDir, 'demo-api-key.txt');
    writeFileSync(file, `${key.key}\n`, { mode: 0o600 });
    process.stdout.write(
      [
        summary,
        `Its API key is in ${file} (the key alone, readable by this account only). Try:`,
        `  curl -s '${base}/v1/contacts?limit=2' -H "Authorization: Bearer $(cat '${file}')"`,
        '',
      ].join('\n'),
    );
  }
}
