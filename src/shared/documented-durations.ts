// Durations the documents state but the configuration sets. Descriptions carry these markers; the
// OpenAPI documents render them from the running configuration (api/openapi.ts), so what a reader
// is told is what this installation does.
export const IDEMPOTENCY_WINDOW = '{{idempotency_window}}';
export const EVENTS_RETENTION = '{{events_retention}}';

const plural = (n: number, unit: string) => `${n} ${unit}${n === 1 ? '' : 's'}`;

/** Every marker of `text` replaced by its duration under these settings. */
export function renderDurations(
  text: string,
  settings: { idempotencyTtlHours: number; eventsRetentionDays: number },
): string {
  return text
    .replaceAll(IDEMPOTENCY_WINDOW, plural(settings.idempotencyTtlHours, 'hour'))
    .replaceAll(EVENTS_RETENTION, plural(settings.eventsRetentionDays, 'day'));
}
