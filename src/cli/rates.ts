// The CLI's human-friendly rates (600/min); its durations (90s, 15m, 24h, 30d) are shared/durations.ts.

/** "600/min", "600/m", "10/s" or "600": requests per minute, a whole number. */
export function parseRatePerMinute(text: string): number | null {
  const m = /^(\d+)(?:\/(s|sec|m|min|minute|h|hour))?$/.exec(text.trim());
  if (!m) return null;
  const n = Number(m[1]);
  const perMinute = { s: n * 60, sec: n * 60, h: n / 60, hour: n / 60 }[m[2] ?? ''] ?? n;
  return Number.isInteger(perMinute) && perMinute >= 1 ? perMinute : null;
}
