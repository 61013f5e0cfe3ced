// The owner's command-line tool. It manages workspaces and keys and seeds data, against the same
// store the server uses, also while the server runs (see modules/owner/owner-channel.ts).
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { migrate } from '../infra/migrate.js';
import { GENERATED_DATABASE_CODE } from '../modules/resources.js';
import { embeddedStoreInUse, openStore, StoreBusy } from '../infra/store.js';
import { callOwnerChannel, OwnerChannelUnavailable, ownerSocketPath } from '../modules/owner/owner-channel.js';
import {
  OwnerError,
  ownerCommands,
  type OwnerCommandName,
  type OwnerInput,
  type OwnerOutput,
} from '../modules/owner/owner.service.js';
import { defaultWorkers, serve, WorkersUnsupported } from '../cluster.js';
import type { SeedAmounts } from '../modules/owner/seed.js';
import { parseDuration } from '../shared/durations.js';
import { parseRatePerMinute } from './rates.js';
import { printAttempts, printKeys, printTable, printUsage, printWebhooks } from './output.js';

const USAGE = `Usage: workspace-api <command> [options]

  serve [--workers N]                     run the API (PORT, DATABASE_URL, ... from the environment);
                                          N processes behind one port (default: one per core on
                                          PostgreSQL, one on the embedded store)
  migrate                                 apply pending database migrations

  workspaces create --name NAME [--timezone IANA_ZONE] [--json]
  workspaces list [--json]
  workspaces suspend WORKSPACE_ID         keys of a suspended workspace get 403 within a second
  workspaces resume WORKSPACE_ID

  keys create --workspace ID --scopes a,b --name NAME [--rate-limit 600/min] [--concurrency N]
              [--expires-in 30d] [--json]  --concurrency: requests in flight at once (default
                                          DEFAULT_CONCURRENT_REQUESTS)
  keys list [--workspace ID] [--json]     scopes, expiry, rate limit and usage; never a secret
  keys usage KEY_ID [--days 30] [--json]  requests per day and operation
  keys rotate KEY_ID [--grace 24h] [--json]  new key; the old one stays valid for the grace (0: none)
  keys revoke KEY_ID                      refused by the running server within a second

  seed --workspace ID [--contacts N] [--appointments N] [--catalog-items N] [--conversations N]
       [--messages-per-conversation N] [--automations N] [--internal-marker TEXT] [--json]
                                          without amounts: every resource with default amounts
  contacts delete CONTACT_ID              as the product deletes it; the events feed shows it
  contacts delete --ids-file FILE [--json]  many in one run: one id per line (FILE - reads standard
                                          input; blank lines and # comments skipped); ids no
                                          contact has are reported, not refused
  appointments delete APPOINTMENT_ID

  webhooks create --workspace ID --url URL --scopes a,b [--events contact.created,…] [--json]
                                          signed deliveries of the feed's events (docs/webhooks.md);
                                          prints the signing secret once
  webhooks list [--workspace ID] [--json] status (and why), backlog, last attempt; never a secret
  webhooks disable ID | enable ID         pause; resume (pending deliveries are due at once)
  webhooks delete ID
  webhooks rotate-secret ID [--grace 24h] [--json]  new secret; the old one also signs for the grace
  webhooks test ID [--json]               send a test message now and print the outcome
  webhooks deliveries ID [--limit 50] [--json]  recent attempts: event, outcome, status, duration, error
  webhooks replay ID --after EVENT_ID [--json]  deliver again every event after that one, and resume

The store is PostgreSQL when DATABASE_URL is set, otherwise the embedded store in DATA_DIR (./data).`;

class UsageError extends Error {}

const OPTIONS = {
  name: { type: 'string' },
  timezone: { type: 'string' },
  workspace: { type: 'string' },
  scopes: { type: 'string' },
  'rate-limit': { type: 'string' },
  concurrency: { type: 'string' },
  'expires-in': { type: 'string' },
  grace: { type: 'string' },
  days: { type: 'string' },
  contacts: { type: 'string' },
  appointments: { type: 'string' },
  'catalog-items': { type: 'string' },
  conversations: { type: 'string' },
  'messages-per-conversation': { type: 'string' },
  automations: { type: 'string' },
  'internal-marker': { type: 'string' },
  workers: { type: 'string' },
  url: { type: 'string' },
  events: { type: 'string' },
  after: { type: 'string' },
  limit: { type: 'string' },
  json: { type: 'boolean', default: false },
  'ids-file': { type: 'string' },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

type Options = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

function required(value: string | undefined, flag: string): string {
  if (value === undefined || value === '') throw new UsageError(`${flag} is required`);
  return value;
}

function count(value: string | undefined, flag: string): number {
  if (value === undefined) return 0;
  if (!/^\d+$/.test(value)) throw new UsageError(`${flag} must be a whole number`);
  return Number(value);
}

function duration(value: string, flag: string): number {
  const ms = parseDuration(value);
  if (ms === null) throw new UsageError(`${flag} must be a duration such as 90s, 15m, 24h or 30d`);
  return ms;
}

/**
 * A rotation's grace period: 24 hours by default, and 0 (or 0s, 0h, …) ends the old key's or
 * secret's validity at once, which is what an owner wants after a leak.
 */
function graceMs(value: string | undefined): number {
  if (value === undefined) return 24 * 3_600_000;
  if (/^0+(?:\.0+)?(?:ms|s|m|min|h|d)?$/.test(value.trim())) return 0;
  return duration(value, '--grace');
}

/** Runs an owner command against the store, or through the running embedded server. */
async function runOwner<N extends OwnerCommandName>(
  config: Config,
  name: N,
  input: OwnerInput<N>,
): Promise<OwnerOutput<N>> {
  const command = ownerCommands[name] as (ctx: unknown, input: OwnerInput<N>) => Promise<OwnerOutput<N>>;
  const viaServer = async () => {
    const socket = ownerSocketPath(config.dataDir);
    // The server may still be starting: give it a moment to open its channel.
    for (let attempt = 0; ; attempt++) {
      try {
        return (await callOwnerChannel(socket, name, input)) as OwnerOutput<N>;
      } catch (err) {
        if (!(err instanceof OwnerChannelUnavailable) || attempt >= 60) throw err;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  };
  if (await embeddedStoreInUse(config)) return viaServer();
  let store;
  try {
    store = await openStore(config, { code: GENERATED_DATABASE_CODE, poolSize: 2 });
  } catch (err) {
    if (err instanceof StoreBusy) return viaServer();
    throw err;
  }
  try {
    return await command(
      {
        db: store.db,
        defaultRateLimitPerMinute: config.defaultRateLimitPerMinute,
        webhooks: { timeoutMs: config.webhooks.timeoutMs, targets: config.webhooks.targets },
      },
      input,
    );
  } finally {
    await store.close();
  }
}

async function main(argv: string[]): Promise<void> {
  const { values: o, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  const [command, sub, arg] = positionals;
  if (o.help || !command) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const config = loadConfig();
  const print = (value: unknown, human: () => void) => {
    if (o.json) process.stdout.write(`${JSON.stringify(value)}\n`);
    else human();
  };

  switch (command) {
    case 'serve': {
      const workers = o.workers === undefined ? defaultWorkers(config) : count(o.workers, '--workers');
      if (workers < 1) throw new UsageError('--workers must be 1 or more');
      await serve(config, workers);
      return;
    }
    case 'migrate': {
      const store = await openStore(config, { code: GENERATED_DATABASE_CODE, poolSize: 1 });
      try {
        const report = await migrate(store.db, GENERATED_DATABASE_CODE);
        print(report, () => process.stdout.write(`schema up to date (${report.applied.length} applied now)\n`));
      } finally {
        await store.close();
      }
      return;
    }
    case 'workspaces':
      return workspaces(config, sub, arg, o, print);
    case 'keys':
      return keys(config, sub, arg, o, print);
    case 'webhooks':
      return webhooks(config, sub, arg, o, print);
    case 'seed': {
      const amounts: Partial<SeedAmounts> = {};
      const flags = {
        contacts: 'contacts',
        appointments: 'appointments',
        catalogItems: 'catalog-items',
        conversations: 'conversations',
        messagesPerConversation: 'messages-per-conversation',
        automations: 'automations',
      } as const;
      for (const [name, flag] of Object.entries(flags)) {
        if (o[flag] !== undefined) amounts[name as keyof SeedAmounts] = count(o[flag], `--${flag}`);
      }
      const result = await seedInChunks(config, {
        workspaceId: required(o.workspace, '--workspace'),
        amounts,
        ...(o['internal-marker'] !== undefined ? { internalMarker: o['internal-marker'] } : {}),
      });
      print(result, () =>
        process.stdout.write(
          `seeded ${Object.entries(result)
            .filter(([k]) => k !== 'workspace_id')
            .map(([k, v]) => `${String(v)} ${k.replace('_', ' ')}`)
            .join(', ')}\n`,
        ),
      );
      return;
    }
    case 'contacts':
    case 'appointments': {
      if (sub !== 'delete') throw new UsageError(`${command} needs: delete ID`);
      if (command === 'contacts' && o['ids-file'] !== undefined) {
        if (arg !== undefined) throw new UsageError('contacts delete takes CONTACT_ID or --ids-file, not both');
        const result = await runOwner(config, 'deleteContacts', { contactIds: await idsFrom(o['ids-file']) });
        print(result, () => {
          process.stdout.write(`deleted ${result.deleted.length} contacts\n`);
          if (result.not_found.length > 0) {
            const shown = result.not_found.slice(0, 10).join(', ');
            const more = result.not_found.length > 10 ? `, and ${result.not_found.length - 10} more` : '';
            process.stdout.write(`${result.not_found.length} not found: ${shown}${more}\n`);
          }
        });
        return;
      }
      const id = required(arg, 'ID');
      const deleted =
        command === 'contacts'
          ? await runOwner(config, 'deleteContact', { contactId: id })
          : await runOwner(config, 'deleteAppointment', { appointmentId: id });
      print(deleted, () => process.stdout.write(`deleted ${command.slice(0, -1)} ${deleted.id}\n`));
      return;
    }
    default:
      throw new UsageError(`unknown command ${command}`);
  }
}

/**
 * The ids of an --ids-file (`-`: standard input): one per line; blank lines and what follows a #
 * are skipped. A line that is not a UUID is refused, naming its line, before anything is deleted.
 */
async function idsFrom(file: string): Promise<string[]> {
  const text =
    file === '-'
      ? await readStdin()
      : await readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
          throw new OwnerError(`--ids-file ${file}: ${err.code === 'ENOENT' ? 'no such file' : err.message}`);
        });
  const ids: string[] = [];
  const bad: number[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.replace(/#.*$/, '').trim();
    if (line === '') return;
    if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(line)) ids.push(line);
    else bad.push(i + 1);
  });
  if (bad.length > 0) {
    const lines = bad.slice(0, 10).join(', ') + (bad.length > 10 ? `, and ${bad.length - 10} more` : '');
    throw new OwnerError(`--ids-file ${file}: not a contact id (a UUID) on line ${lines}; nothing was deleted.`);
  }
  return ids;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

type Print = (value: unknown, human: () => void) => void;

const SEED_CHUNK = 25_000;

/**
 * Large seeds go in chunks of 25,000 rows per resource, one transaction each, so the owner sees
 * progress on a terminal and a long seed never holds one huge transaction.
 */
async function seedInChunks(config: Config, input: OwnerInput<'seed'>): Promise<OwnerOutput<'seed'>> {
  const amounts = input.amounts ?? {};
  const large = Object.entries(amounts).filter(
    ([name, n]) => name !== 'messagesPerConversation' && (n ?? 0) > SEED_CHUNK,
  );
  if (large.length === 0) return runOwner(config, 'seed', input);
  const totals: Record<string, number | string> = { workspace_id: input.workspaceId };
  const show = process.stderr.isTTY;
  for (const [name, n] of Object.entries(amounts)) {
    if (name === 'messagesPerConversation') continue;
    for (let done = 0; done < (n ?? 0); done += SEED_CHUNK) {
      const chunk = Math.min(SEED_CHUNK, (n ?? 0) - done);
      const part = await runOwner(config, 'seed', {
        ...input,
        amounts: { ...amounts, ...zero(amounts), [name]: chunk },
      });
      for (const [k, v] of Object.entries(part))
        if (typeof v === 'number') totals[k] = ((totals[k] as number) ?? 0) + v;
      if (show)
        process.stderr.write(
          `\rseeding ${name}: ${(done + chunk).toLocaleString('en')}/${(n ?? 0).toLocaleString('en')}   `,
        );
    }
    if (show) process.stderr.write('\n');
  }
  return totals as OwnerOutput<'seed'>;
}

/** Every amount set to 0 except the messages per conversation, which is a ratio, not an amount. */
function zero(amounts: Partial<SeedAmounts>): Partial<SeedAmounts> {
  return Object.fromEntries(
    Object.keys(amounts)
      .filter((k) => k !== 'messagesPerConversation')
      .map((k) => [k, 0]),
  );
}

async function workspaces(config: Config, sub: string | undefined, arg: string | undefined, o: Options, print: Print) {
  switch (sub) {
    case 'create': {
      const ws = await runOwner(config, 'createWorkspace', {
        name: required(o.name, '--name'),
        ...(o.timezone ? { timezone: o.timezone } : {}),
      });
      return print(ws, () => process.stdout.write(`created workspace ${ws.id} (${ws.name}, ${ws.timezone})\n`));
    }
    case 'list': {
      const list = await runOwner(config, 'listWorkspaces', undefined as never);
      return print(list, () => printTable(list, ['id', 'name', 'status', 'timezone', 'created_at']));
    }
    case 'suspend':
    case 'resume': {
      const ws = await runOwner(config, 'setWorkspaceStatus', {
        workspaceId: required(arg, 'WORKSPACE_ID'),
        status: sub === 'suspend' ? 'suspended' : 'active',
      });
      return print(ws, () => process.stdout.write(`workspace ${ws.id} is ${ws.status}\n`));
    }
    case undefined:
    default:
      throw new UsageError('workspaces needs one of: create, list, suspend, resume');
  }
}

async function keys(config: Config, sub: string | undefined, arg: string | undefined, o: Options, print: Print) {
  switch (sub) {
    case 'create': {
      let rate: number | undefined;
      if (o['rate-limit'] !== undefined) {
        const parsed = parseRatePerMinute(o['rate-limit']);
        if (parsed === null) throw new UsageError('--rate-limit must look like 600/min');
        rate = parsed;
      }
      const key = await runOwner(config, 'createKey', {
        workspaceId: required(o.workspace, '--workspace'),
        name: required(o.name, '--name'),
        scopes: required(o.scopes, '--scopes')
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
        ...(rate !== undefined ? { rateLimitPerMinute: rate } : {}),
        ...(o.concurrency !== undefined ? { concurrencyLimit: count(o.concurrency, '--concurrency') } : {}),
        ...(o['expires-in'] !== undefined ? { expiresInMs: duration(o['expires-in'], '--expires-in') } : {}),
      });
      return print(key, () =>
        process.stdout.write(
          `created key ${key.id} for workspace ${key.workspace_id}\n` +
            `scopes: ${key.scopes.join(', ')}; rate limit ${key.rate_limit_per_minute}/min; ` +
            `${key.concurrency_limit ?? config.defaultConcurrentRequests} requests at once; expires ${key.expires_at ?? 'never'}\n\n` +
            `  ${key.key}\n\nThis is the only time the key is shown. Store it in a secrets manager.\n`,
        ),
      );
    }
    case 'list': {
      const list = await runOwner(config, 'listKeys', o.workspace ? { workspaceId: o.workspace } : {});
      return print(list, () => printKeys(list));
    }
    case 'usage': {
      const days = o.days === undefined ? 30 : count(o.days, '--days');
      const usage = await runOwner(config, 'keyUsage', { keyId: required(arg, 'KEY_ID'), days });
      return print(usage, () => printUsage(usage.key, usage.usage));
    }
    case 'rotate': {
      const grace = graceMs(o.grace);
      const rotated = await runOwner(config, 'rotateKey', { keyId: required(arg, 'KEY_ID'), graceMs: grace });
      return print(rotated, () =>
        process.stdout.write(
          `new key ${rotated.new_key.id} (same workspace, scopes and rate limit):\n\n  ${rotated.new_key.key}\n\n` +
            `The old key ${rotated.old_key.id} keeps working until ${rotated.old_key.expires_at}.\n`,
        ),
      );
    }
    case 'revoke': {
      const key = await runOwner(config, 'revokeKey', { keyId: required(arg, 'KEY_ID') });
      return print(key, () => process.stdout.write(`key ${key.id} revoked at ${key.revoked_at}\n`));
    }
    case undefined:
    default:
      throw new UsageError('keys needs one of: create, list, usage, rotate, revoke');
  }
}

const list = (value: string) =>
  value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

async function webhooks(config: Config, sub: string | undefined, arg: string | undefined, o: Options, print: Print) {
  switch (sub) {
    case 'create': {
      const created = await runOwner(config, 'createWebhook', {
        workspaceId: required(o.workspace, '--workspace'),
        url: required(o.url, '--url'),
        scopes: list(required(o.scopes, '--scopes')),
        ...(o.events !== undefined ? { events: list(o.events) } : {}),
      });
      return print(created, () =>
        process.stdout.write(
          `created webhook endpoint ${created.id} for workspace ${created.workspace_id}\n` +
            `url: ${created.url}\nscopes: ${created.scopes.join(', ')}; events: ${created.events?.join(', ') ?? 'all they read'}\n\n` +
            `  ${created.secret}\n\nThis signing secret is shown only now. Give it to the receiver to verify signatures.\n`,
        ),
      );
    }
    case 'list': {
      const endpoints = await runOwner(config, 'listWebhooks', o.workspace ? { workspaceId: o.workspace } : {});
      return print(endpoints, () => printWebhooks(endpoints));
    }
    case 'disable':
    case 'enable': {
      const endpoint = await runOwner(config, 'setWebhookStatus', {
        id: required(arg, 'ID'),
        status: sub === 'enable' ? 'active' : 'disabled',
      });
      return print(endpoint, () => process.stdout.write(`webhook endpoint ${endpoint.id} is ${endpoint.status}\n`));
    }
    case 'delete': {
      const endpoint = await runOwner(config, 'deleteWebhook', { id: required(arg, 'ID') });
      return print(endpoint, () => process.stdout.write(`deleted webhook endpoint ${endpoint.id}\n`));
    }
    case 'rotate-secret': {
      const grace = graceMs(o.grace);
      const rotated = await runOwner(config, 'rotateWebhookSecret', { id: required(arg, 'ID'), graceMs: grace });
      return print(rotated, () =>
        process.stdout.write(
          `new signing secret of webhook endpoint ${rotated.id}:\n\n  ${rotated.secret}\n\n` +
            (rotated.previous_secret_expires_at
              ? `Deliveries carry a signature by the old secret too until ${rotated.previous_secret_expires_at}.\n`
              : 'The old secret no longer signs.\n'),
        ),
      );
    }
    case 'test': {
      const result = await runOwner(config, 'testWebhook', { id: required(arg, 'ID') });
      // A test that was not acknowledged fails the command, so a script can tell.
      if (result.outcome !== 'acked') process.exitCode = 1;
      return print(result, () =>
        process.stdout.write(
          `test message ${result.message_id}: ${result.outcome}` +
            `${result.status !== null ? ` (HTTP ${result.status})` : ''} in ${result.duration_ms} ms` +
            `${result.error ? `: ${result.error}` : ''}\n`,
        ),
      );
    }
    case 'deliveries': {
      const limit = o.limit === undefined ? 50 : count(o.limit, '--limit');
      const history = await runOwner(config, 'webhookDeliveries', { id: required(arg, 'ID'), limit });
      return print(history, () => printAttempts(history.endpoint, history.attempts));
    }
    case 'replay': {
      const replay = await runOwner(config, 'replayWebhook', {
        id: required(arg, 'ID'),
        after: required(o.after, '--after'),
      });
      return print(replay, () =>
        process.stdout.write(
          `webhook endpoint ${replay.endpoint.id} is ${replay.endpoint.status}; every event after ${replay.replayed_after} is delivered again\n`,
        ),
      );
    }
    case undefined:
    default:
      throw new UsageError(
        'webhooks needs one of: create, list, disable, enable, delete, rotate-secret, test, deliveries, replay',
      );
  }
}

// A reader that stops early (`… | head`) closes the pipe: the output it wanted was written.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

main(process.argv.slice(2)).catch((err: unknown) => {
  if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
    process.stderr.write(`workspace-api: ${(err as Error).message}\n\n${USAGE}\n`);
    process.exit(2);
  }
  if (err instanceof OwnerError || err instanceof ConfigError || err instanceof WorkersUnsupported) {
    process.stderr.write(`workspace-api: ${err.message}\n`);
    process.exit(1);
  }
  process.stderr.write(`workspace-api: ${(err as Error).message ?? String(err)}\n`);
  process.exit(1);
});
