// Parsing of the CLI's human-friendly amounts: durations (90s, 15m, 24h, 30d) and rates (600/min).
const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, min: 60_000, h: 3_600_000, d: 86_400_000 };

export function parseDuration(text: string): number | null {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|min|h|d)$/.exec(text.trim());
  if (!m) return null;
  const ms = Number(m[1]) * UNIT_MS[m[2]!]!;
  return Number.isFinite(ms) && ms > 0 ? Math.round(ms) : null;
}

/** "600/min", "600/m", "10/s" or "600": requests per minute, a whole number. */
export function parseRatePerMinute(text: string): number | null {
  const m = /^(\d+)(?:\/(s|sec|m|min|minute|h|hour))?$/.exec(text.trim());
  if (!m) return null;
  const n = Number(m[1]);
  const perMinute = { s: n * 60, sec: n * 60, h: n / 60, hour: n / 60 }[m[2] ?? ''] ?? n;
  return Number.isInteger(perMinute) && perMinute >= 1 ? perMinute : null;
}
