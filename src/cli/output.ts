// Readable tables for the owner's terminal (the same data is available as JSON with --json).
import type { ApiKeyRow, UsageRow } from '../modules/api-keys/api-keys.repository.js';
import type { KeyWithUsage } from '../modules/owner/owner.service.js';
import type { AttemptRow, EndpointRow, EndpointWithBacklog } from '../modules/webhooks/webhooks.repository.js';

export function printTable(rows: readonly object[], columns: string[]): void {
  const cells = rows.map((r) => columns.map((c) => format((r as Record<string, unknown>)[c])));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  process.stdout.write(`${line(columns.map((c) => c.toUpperCase()))}\n`);
  for (const row of cells) process.stdout.write(`${line(row)}\n`);
  if (rows.length === 0) process.stdout.write('(none)\n');
}

function format(v: unknown): string {
  if (v === null || v === undefined) return '-';
  if (Array.isArray(v)) return v.join(',');
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

export function printKeys(keys: KeyWithUsage[]): void {
  printTable(
    keys.map((k) => ({
      ...k,
      rate_limit: `${k.rate_limit_per_minute}/min`,
      at_once: k.concurrency_limit ?? 'default',
      expires: k.expires_at ?? 'never',
      last_used: k.last_used_at ?? 'never',
      today: k.requests_today,
      last_7_days: k.requests_last_7_days,
      errors: `${(k.error_rate_last_7_days * 100).toFixed(1)}%`,
    })),
    [
      'id',
      'workspace_id',
      'name',
      'status',
      'scopes',
      'rate_limit',
      'at_once',
      'expires',
      'last_used',
      'today',
      'last_7_days',
      'errors',
    ],
  );
}

export function printUsage(key: ApiKeyRow, usage: UsageRow[]): void {
  const total = usage.reduce((n, u) => n + u.requests, 0);
  const errors = usage.reduce((n, u) => n + u.client_errors + u.server_errors + u.rate_limited, 0);
  const rate = total === 0 ? '-' : `${((errors / total) * 100).toFixed(1)}%`;
  process.stdout.write(
    `key ${key.id} (${key.name}), last used ${key.last_used_at ?? 'never'}; ${total} requests, errors ${rate}\n`,
  );
  printTable(usage, ['day', 'operation', 'requests', 'client_errors', 'server_errors', 'rate_limited']);
}

export function printWebhooks(endpoints: EndpointWithBacklog[]): void {
  printTable(
    endpoints.map((e) => ({
      ...e,
      events: e.events ?? 'all',
      secret: e.secret_hint,
      why: e.status_reason,
      last_attempt: e.last_attempt_at ? `${e.last_outcome ?? ''} ${e.last_attempt_at}` : 'never',
      failing:
        e.failures_in_a_row > 0
          ? `${e.failures_in_a_row} in a row since ${e.failing_since}` +
            (e.paused_until ? `; paused until ${e.paused_until}` : '')
          : '',
    })),
    ['id', 'workspace_id', 'url', 'status', 'why', 'scopes', 'events', 'secret', 'pending', 'last_attempt', 'failing'],
  );
}

export function printAttempts(endpoint: EndpointRow, attempts: AttemptRow[]): void {
  process.stdout.write(
    `webhook endpoint ${endpoint.id} (${endpoint.url}) is ${endpoint.status}` +
      `${endpoint.status_reason ? `: ${endpoint.status_reason}` : ''}; latest attempts first\n`,
  );
  printTable(
    attempts.map((a) => ({ ...a, event: a.message_id, type: a.event_type, duration: `${a.duration_ms} ms` })),
    ['attempted_at', 'event', 'type', 'outcome', 'status', 'duration', 'error'],
  );
}
