// Baseline: pgbench sending the list's SQL straight to PostgreSQL (prepared, as the service sends it),
// with as many sessions as a service process has pool connections, so the database sees the same
// concurrency. Its figures are the database's ceiling for this query on this machine; every
// latency comes from pgbench's per-transaction log.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONTACT_COLUMNS } from '../src/modules/contacts/contacts.repository.js';
import { repetitionOf, type Repetition } from './load.js';
import { LIST_LIMIT } from './settings.js';

// pgbench turns :ws into a parameter of the prepared statement, as the service's $1.
const LIST_SCRIPT = `SELECT ${CONTACT_COLUMNS} FROM contacts WHERE workspace_id = :ws
      ORDER BY contacts.updated_at, contacts.id LIMIT ${LIST_LIMIT + 1};\n`;

/** Runs pgbench for `seconds`; `dir` takes the script and the logs. */
export async function pgbenchOnce(
  databaseUrl: string,
  workspaceId: string,
  clients: number,
  seconds: number,
  dir: string,
): Promise<Repetition> {
  const script = join(dir, 'list.sql');
  writeFileSync(script, LIST_SCRIPT);
  await pgbench(databaseUrl, [
    '--no-vacuum',
    '--protocol=prepared',
    `--client=${clients}`,
    // One thread per core: pgbench's own work competes for the same two cores.
    '--jobs=2',
    `--time=${seconds}`,
    `--file=${script}`,
    `--define=ws=${workspaceId}`,
    '--log',
    `--log-prefix=${join(dir, 'pgbench_log')}`,
  ]);
  const latencies = transactionLatencies(dir, 'pgbench_log');
  // Logs are named after pgbench's pid: the next repetition must not read this one's.
  for (const file of readdirSync(dir)) if (file.startsWith('pgbench_log.')) rmSync(join(dir, file));
  return repetitionOf(latencies, seconds, 0);
}

/** Latencies in ms from the per-thread logs: "client transaction latency_us script epoch epoch_us". */
function transactionLatencies(dir: string, prefix: string): number[] {
  const latencies: number[] = [];
  for (const file of readdirSync(dir).filter((f) => f.startsWith(`${prefix}.`))) {
    for (const line of readFileSync(join(dir, file), 'utf8').split('\n')) {
      const fields = line.split(' ');
      if (fields.length >= 6) latencies.push(Number(fields[2]) / 1000);
    }
  }
  return latencies;
}

function pgbench(databaseUrl: string, args: string[]): Promise<void> {
  const url = new URL(databaseUrl);
  const connection = [
    `--host=${url.hostname}`,
    `--port=${url.port || '5432'}`,
    `--username=${decodeURIComponent(url.username || 'postgres')}`,
    decodeURIComponent(url.pathname.slice(1)),
  ];
  const env = url.password ? { ...process.env, PGPASSWORD: decodeURIComponent(url.password) } : process.env;
  return new Promise((resolve, reject) => {
    const child = spawn('pgbench', [...args, ...connection], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (output += d.toString('utf8')));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`pgbench exited with ${code}:\n${output}`)),
    );
  });
}
