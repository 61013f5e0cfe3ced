// Human-friendly durations (90s, 15m, 24h, 30d), read by the CLI's flags and by configuration
// such as WEBHOOK_RETRY_SCHEDULE.
const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, min: 60_000, h: 3_600_000, d: 86_400_000 };

/** Milliseconds of a duration such as "500ms", "5s", "30m", "2h" or "3d"; null for anything else. */
export function parseDuration(text: string): number | null {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|min|h|d)$/.exec(text.trim());
  if (!m) return null;
  const ms = Number(m[1]) * UNIT_MS[m[2]!]!;
  return Number.isFinite(ms) && ms > 0 ? Math.round(ms) : null;
}
