// For CI (.ci/run): starts a private primary and a streaming replica of it (servers.ts,
// startReplicaPair), makes a database on the primary, waits until the replica has it, writes
// `DATABASE_URL=…` and `DATABASE_READ_URL=…` to the file named by its argument, and keeps both
// servers running until it is sent SIGTERM.
// Usage: node --import tsx test/replica-pair.ts OUT_FILE
import { writeFileSync } from 'node:fs';
import pg from 'pg';
import { sleep } from './harness.js';
import { startReplicaPair, withoutReplicaPair } from './servers.js';

const out = process.argv[2];
if (!out) throw new Error('usage: replica-pair.ts OUT_FILE');
const missing = withoutReplicaPair();
if (missing) throw new Error(`cannot start a primary and a replica here: ${missing}`);
// SIGTERM ends the process through exit, whose handler stops the servers.
process.on('SIGTERM', () => process.exit(0));

const pair = await startReplicaPair();
const database = 'workspace_api_ci';
const primary = new pg.Client({ connectionString: pair.primaryUrl });
await primary.connect();
await primary.query(`CREATE DATABASE ${database}`);
await primary.end();
const on = (url: string) => Object.assign(new URL(url), { pathname: `/${database}` }).href;
for (let i = 0; ; i++) {
  const replica = new pg.Client({ connectionString: on(pair.replicaUrl) });
  const reached = await replica.connect().then(
    () => true,
    () => false,
  );
  await replica.end().catch(() => undefined);
  if (reached) break;
  if (i > 100) throw new Error('the replica never received the new database');
  await sleep(100);
}
writeFileSync(out, `DATABASE_URL=${on(pair.primaryUrl)}\nDATABASE_READ_URL=${on(pair.replicaUrl)}\n`);
setInterval(() => undefined, 60_000);
