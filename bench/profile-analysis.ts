// Reads a V8 CPU profile (.cpuprofile, as `node --cpu-prof` writes it) and says where a request's
// CPU went, stage by stage. Each sample is charged to the stage of the deepest frame that belongs to
// one (a sample in a Buffer copy under pg's protocol parser is the database client's; a sample in
// JSON.stringify under the serializer is serialization), Node's own internals and native code
// inheriting the stage of what called them.

export interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string }; children?: number[] }[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Stages in the order a request meets them; the first rule that matches a frame names its stage. */
const STAGES: readonly { stage: string; matches: (url: string, fn: string) => boolean }[] = [
  { stage: 'authentication (key lookup, digest)', matches: (u) => /api-keys\/(authenticator|key-format)/.test(u) },
  {
    stage: 'rate limit (store round trip)',
    matches: (u) =>
      /infra\/(rate-limit|admission-store)|node_modules\/(ioredis|redis-parser|@ioredis|standard-as-callback)\//.test(
        u,
      ),
  },
  { stage: 'usage counters', matches: (u) => u.includes('usage-recorder') },
  { stage: 'metrics', matches: (u) => /infra\/metrics|node_modules\/(prom-client|tdigest|bintrees)\//.test(u) },
  {
    stage: 'logging',
    matches: (u) =>
      /node_modules\/(pino|pino-std-serializers|sonic-boom|fast-redact|quick-format-unescaped)\/|fastify\/lib\/(logger|log)/.test(
        u,
      ),
  },
  { stage: 'guard hook (scope, headers)', matches: (u) => u.includes('plugins/guard') },
  { stage: 'conventions hooks', matches: (u) => u.includes('plugins/request-conventions') },
  { stage: 'error rendering', matches: (u) => u.includes('plugins/errors') },
  {
    stage: 'validation (Ajv)',
    matches: (u, fn) =>
      /node_modules\/(ajv|ajv-formats|fast-uri)\/|fastify\/lib\/validation/.test(u) ||
      (u === '' && /^validate\d*$/.test(fn)),
  },
  {
    stage: 'serialization',
    matches: (u, fn) =>
      /node_modules\/(fast-json-stringify|@fastify\/fast-json-stringify-compiler)\//.test(u) ||
      (u.includes('fastify/lib/reply') && /serialize/i.test(fn)) ||
      (u === '' && /^(anonymous|main)\d*$|^\$|^serialize|^asString/.test(fn)),
  },
  {
    stage: 'cursor and event id codecs',
    matches: (u) => /shared\/cursor|events\/event-ids|shared\/canonical-json/.test(u),
  },
  { stage: 'idempotency store', matches: (u) => /infra\/idempotency-store|http\/write-reply/.test(u) },
  {
    stage: 'database client (pg)',
    matches: (u) =>
      /node_modules\/(pg|pg-protocol|pg-pool|pg-types|postgres-array|postgres-date|postgres-interval|postgres-bytea|pg-int8|buffer-writer|packet-reader)\/|infra\/(database|keyset-list)/.test(
        u,
      ),
  },
  { stage: 'route handlers', matches: (u) => /\/(src|dist)\/(modules|http|shared|api)\//.test(u) },
  { stage: 'routing (find-my-way)', matches: (u) => u.includes('node_modules/find-my-way/') },
  {
    stage: 'fastify core (hooks, reply, headers)',
    matches: (u) => /node_modules\/(fastify|@fastify|avvio|light-my-request|toad-cache|fast-querystring)\//.test(u),
  },
  { stage: 'other libraries', matches: (u) => u.includes('node_modules/') },
  { stage: 'other service code', matches: (u) => u.includes('/src/') || u.includes('/dist/') },
];

/** Frames that are Node's or V8's own: charged to whoever called them. */
const isRuntime = (url: string) => url === '' || url.startsWith('node:');

const SPECIAL: Record<string, string> = {
  '(garbage collector)': 'garbage collection',
  '(program)': 'V8 and native code outside JavaScript',
};

/**
 * Native socket writes (to the client, PostgreSQL and Redis). The profiler samples the thread on a
 * wall clock: a system call during which the process waits for a core (two cores shared with
 * PostgreSQL, Redis and the load generator) counts in full. Kept apart, so that this time does not
 * hide in the stage that wrote.
 */
const SYSCALL_STAGE = 'socket writes (system calls, with time spent waiting for a core)';
const SYSCALLS = new Set(['writev', 'writeBuffer', 'writeUtf8String', 'writeLatin1String', 'writeAsciiString']);

interface StageCost {
  stage: string;
  /** CPU milliseconds in the window */
  ms: number;
  /** per request, microseconds */
  us_per_request: number;
  share: number;
}

export interface ProfileSummary {
  /** CPU time sampled in the window, ms (idle excluded) */
  busy_ms: number;
  requests: number;
  us_per_request: number;
  stages: StageCost[];
  /** the functions with the most self time, for reading further */
  top: { fn: string; where: string; ms: number; us_per_request: number }[];
}

/**
 * Sums the samples taken between `fromUs` and `toUs` (the profile's clock: CLOCK_MONOTONIC in
 * microseconds, the clock process.hrtime reads too), or all of them when no window is given.
 */
export function summarizeProfile(
  profile: CpuProfile,
  requests: number,
  window?: { fromUs: number; toUs: number },
): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

  const stageOfNode = new Map<number, string>();
  const stageOf = (id: number): string => {
    const known = stageOfNode.get(id);
    if (known) return known;
    const leaf = byId.get(id)!;
    let stage =
      (Object.hasOwn(SPECIAL, leaf.callFrame.functionName) ? SPECIAL[leaf.callFrame.functionName] : undefined) ??
      (leaf.callFrame.url === '' && SYSCALLS.has(leaf.callFrame.functionName) ? SYSCALL_STAGE : undefined);
    let runtimeFallback: string | undefined;
    for (let at: number | undefined = id; !stage && at !== undefined; at = parent.get(at)) {
      const { url, functionName } = byId.get(at)!.callFrame;
      if (isRuntime(url)) {
        // A frame made at run time (Ajv's validators, the serializer) has no url but a telling name.
        const generated = url === '' ? STAGES.find((s) => s.matches(url, functionName)) : undefined;
        if (generated) stage = generated.stage;
        else if (!runtimeFallback && url.startsWith('node:')) runtimeFallback = runtimeStage(url);
        continue;
      }
      stage = STAGES.find((s) => s.matches(url, functionName))?.stage;
    }
    stage ??= runtimeFallback ?? 'Node.js runtime (HTTP parser, sockets, timers)';
    stageOfNode.set(id, stage);
    return stage;
  };

  const stageMs = new Map<string, number>();
  const selfMs = new Map<number, number>();
  let at = profile.startTime;
  let busy = 0;
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0;
    if (window && (at < window.fromUs || at > window.toUs)) return;
    const next = profile.timeDeltas[i + 1] ?? 0;
    const node = byId.get(id)!;
    if (node.callFrame.functionName === '(idle)') return;
    const ms = next / 1000;
    busy += ms;
    stageMs.set(stageOf(id), (stageMs.get(stageOf(id)) ?? 0) + ms);
    selfMs.set(id, (selfMs.get(id) ?? 0) + ms);
  });

  const perRequest = (ms: number) => (requests > 0 ? (ms * 1000) / requests : 0);
  const stages = [...stageMs]
    .map(([stage, ms]) => ({ stage, ms, us_per_request: perRequest(ms), share: busy > 0 ? ms / busy : 0 }))
    .sort((a, b) => b.ms - a.ms);
  const selfByFunction = new Map<string, { fn: string; where: string; ms: number }>();
  for (const [id, ms] of selfMs) {
    const { functionName, url } = byId.get(id)!.callFrame;
    const where = url.replace(/^file:\/\/.*?\/(node_modules|src|dist)\//, '$1/');
    const key = `${functionName}\u0000${where}`;
    const entry = selfByFunction.get(key) ?? { fn: functionName || '(anonymous)', where, ms: 0 };
    entry.ms += ms;
    selfByFunction.set(key, entry);
  }
  const top = [...selfByFunction.values()]
    .sort((a, b) => b.ms - a.ms)
    .slice(0, 25)
    .map((t) => ({ ...t, us_per_request: perRequest(t.ms) }));
  return { busy_ms: busy, requests, us_per_request: perRequest(busy), stages, top };
}

function runtimeStage(url: string): string {
  if (/crypto/.test(url)) return 'Node.js crypto';
  return 'Node.js runtime (HTTP parser, sockets, timers)';
}
