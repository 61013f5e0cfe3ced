// The embedded store's memory: the service as `npm start` runs it (PGlite in the process), on a
// workspace of its own, at idle and under the list load. Reports resident memory and what holds it:
// the JavaScript heap, and the memory outside it (PGlite's WebAssembly heap and its buffers).
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { measureOnce } from './load.js';
import { definedOnly, freePort, ROOT, rssMiB, startServer } from './processes.js';
import { CONNECTIONS, LIST_LIMIT } from './settings.js';

export interface EmbeddedMemory {
  contacts: number;
  /** MiB */
  idle: MemoryReading;
  under_load: MemoryReading;
  /** resident memory, highest of the readings taken every 200 ms during the load */
  peak_rss_mib: number;
  list_rps: number;
}

interface MemoryReading {
  rss_mib: number | null;
  heap_used_mib: number;
  /** memory outside the JavaScript heap (PGlite's WebAssembly memory, Buffers) */
  external_mib: number;
}

const CONTACTS = 20_000;

export async function measureEmbeddedMemory(scratch: string, seconds: number): Promise<EmbeddedMemory> {
  // Without DATABASE_URL, whatever this shell has: the embedded store.
  const env: Record<string, string | undefined> = {
    ...process.env,
    DATABASE_URL: undefined,
    DATA_DIR: join(scratch, 'embedded'),
    DEMO_ON_FIRST_START: 'false',
  };
  const cli = (...args: string[]) =>
    JSON.parse(
      execFileSync(process.execPath, [join(ROOT, 'bin/workspace-api'), ...args, '--json'], {
        env: definedOnly(env),
        encoding: 'utf8',
      }),
    ) as Record<string, unknown>;
  const workspace = cli('workspaces', 'create', '--name', 'Embedded bench');
  cli('seed', '--workspace', String(workspace.id), '--contacts', String(CONTACTS), '--appointments', '0');
  const key = cli(
    'keys',
    'create',
    '--workspace',
    String(workspace.id),
    '--scopes',
    'contacts:read',
    '--name',
    'bench',
    '--rate-limit',
    '1000000/min',
  );

  const port = await freePort();
  const server = await startServer(
    'service, embedded store',
    process.execPath,
    [join(ROOT, 'bin/workspace-api'), 'serve'],
    { ...env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
    port,
    '/readyz',
  );
  try {
    await new Promise((r) => setTimeout(r, 2_000));
    const idle = await reading(server.url, server.pid);
    let peak = idle.rss_mib ?? 0;
    const sampler = setInterval(() => (peak = Math.max(peak, rssMiB(server.pid) ?? 0)), 200);
    const { repetition } = await measureOnce(
      server.url,
      {
        method: 'GET',
        path: `/v1/contacts?limit=${LIST_LIMIT}`,
        headers: { authorization: `Bearer ${String(key.key)}` },
        connections: CONNECTIONS,
        expect: [200],
      },
      seconds,
    );
    clearInterval(sampler);
    const underLoad = await reading(server.url, server.pid);
    return { contacts: CONTACTS, idle, under_load: underLoad, peak_rss_mib: peak, list_rps: repetition.rps };
  } finally {
    await server.stop();
  }
}

async function reading(url: string, pid: number): Promise<MemoryReading> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const gauge = (name: string) => Number(new RegExp(`^${name} ([0-9.e+]+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
  const mib = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;
  return {
    rss_mib: rssMiB(pid),
    heap_used_mib: mib(gauge('wsapi_nodejs_heap_size_used_bytes')),
    external_mib: mib(gauge('wsapi_nodejs_external_memory_bytes')),
  };
}
