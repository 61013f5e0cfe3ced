// For CI (.ci/run): starts a private primary and a streaming replica of it (servers.ts,
// startReplicaPair), makes a database on the primary, waits until the replica has it, writes
// `DATABASE_URL=…` and `DATABASE_READ_URL=…` to the file named by its argument, and keeps both
// servers running until it is sent SIGTERM.
// Usage: node --import tsx test/replica-pair.ts OUT_FILE
import { writeFileSync } from 'node:fs';
import { startReplicaPair, withoutReplicaPair } from './servers.js';

const out = process.argv[2];
if (!out) throw new Error('usage: replica-pair.ts OUT_FILE');
const missing = withoutReplicaPair();
if (missing) throw new Error(`cannot start a primary and a replica here: ${missing}`);
// SIGTERM ends the process through exit, whose handler stops the servers.
process.on('SIGTERM', () => process.exit(0));

const pair = await startReplicaPair();
const { primaryUrl, replicaUrl } = await pair.createDatabase('workspace_api_ci');
writeFileSync(out, `DATABASE_URL=${primaryUrl}\nDATABASE_READ_URL=${replicaUrl}\n`);
setInterval(() => undefined, 60_000);
