// The webhook deliveries as the v2 document describes them (OpenAPI 3.1 `webhooks`): the requests
// the service makes to a receiver, not operations it serves. `event` carries a change of the feed
// (the Event schema itself), `webhook.test` the message `webhooks test` sends. The headers are
// those delivery.ts and webhooks.service.ts send; test/openapi-webhooks.test.ts holds real
// deliveries to this description.
import { Type, type Static } from 'typebox';
import { DateTime, StringEnum, Uuid } from '../../shared/schemas.js';
import { EVENT_ID_PATTERN } from '../events/event-ids.js';
import { Event } from '../events/events.schemas.js';
import { USER_AGENT } from './http-target.js';

/** The id of a test message: "test_" and 16 random bytes in base64url, never an event id. */
const TEST_MESSAGE_ID_PATTERN = '^test_[A-Za-z0-9_-]{22}$';

export const WebhookTest = Type.Object(
  {
    id: Type.String({ pattern: TEST_MESSAGE_ID_PATTERN, maxLength: 27, description: 'Also the webhook-id.' }),
    type: StringEnum(['webhook.test']),
    occurred_at: DateTime,
    data: Type.Object(
      {
        endpoint_id: { ...Uuid, description: 'The endpoint the test was sent to.' },
        message: Type.String({ maxLength: 200 }),
      },
      { additionalProperties: false },
    ),
  },
  {
    additionalProperties: false,
    title: 'WebhookTest',
    description: 'The message `webhooks test` sends: not an event of the feed, never queued, never retried.',
  },
);
export type WebhookTestT = Static<typeof WebhookTest>;

const SIGNATURE = 'v1,[A-Za-z0-9+/]{43}=';

const header = (name: string, description: string, schema: object) => ({
  name,
  in: 'header',
  required: true,
  description,
  schema,
});

const headers = (id: { pattern: string; maxLength: number; description: string }) => [
  header('webhook-id', id.description, { type: 'string', pattern: id.pattern, maxLength: id.maxLength }),
  header('webhook-timestamp', 'When this attempt was made, in seconds since 1970-01-01T00:00:00Z.', {
    type: 'integer',
    format: 'int64',
    minimum: 0,
    maximum: Number.MAX_SAFE_INTEGER,
  }),
  header(
    'webhook-signature',
    'v1,<base64 of HMAC-SHA256(key, "<webhook-id>.<webhook-timestamp>.<body>")>, where key is the base64-decoded part of the endpoint secret after whsec_ and body is the raw request body. During a secret rotation two signatures, separated by a space: by the new secret, then by the previous one; either one verifying is enough.',
    { type: 'string', pattern: `^${SIGNATURE}( ${SIGNATURE})?$`, maxLength: 95 },
  ),
  header('user-agent', 'Names the sender.', { type: 'string', enum: [USER_AGENT] }),
];

const SIGNED = `Signed per Standard Webhooks (https://www.standardwebhooks.com): verify the signature over the raw bytes received (never JSON parsed and written again), refuse a webhook-timestamp more than five minutes from now, and skip a webhook-id already applied. No API key is sent: the signature authenticates the sender.`;

const delivery = (
  operationId: string,
  summary: string,
  description: string,
  parameters: object[],
  body: object,
  responses: Record<string, { description: string }>,
) => ({
  post: {
    operationId,
    summary,
    description: `${description}\n\n${SIGNED}`,
    tags: ['Webhooks'],
    security: [],
    parameters,
    requestBody: { required: true, content: { 'application/json': { schema: body } } },
    responses,
  },
});

/** The `webhooks` section of the v2 document. */
export function webhooksSection(): Record<string, object> {
  return {
    event: delivery(
      'deliverEvent',
      'A change of the feed, pushed to a webhook endpoint',
      "POSTed to the endpoint's URL for every event of the types its scopes read (and its --events), in feed order per resource. The body is the event exactly as GET /v2/events lists it, built when the attempt is made: an event of a resource deleted meanwhile carries its tombstone.",
      headers({
        pattern: EVENT_ID_PATTERN,
        maxLength: 26,
        description: 'The event id (evt_…): the same for every attempt and replay of the event. Deduplicate on it.',
      }),
      Event,
      {
        '2XX': {
          description: 'Acknowledged: the event is not sent again (only a replay by the owner sends it again).',
        },
        '410': { description: 'Gone: the endpoint is disabled at once and nothing more is sent to it.' },
        default: {
          description:
            'Any other answer, a redirect (never followed), no answer within WEBHOOK_TIMEOUT_MS or a failed connection: the event is sent again on the retry schedule (WEBHOOK_RETRY_SCHEDULE); once the schedule is spent the endpoint stops receiving until the owner enables or replays it. Only the status counts.',
        },
      },
    ),
    'webhook.test': delivery(
      'deliverWebhookTest',
      'A test message, sent by the owner',
      'POSTed once by `workspace-api webhooks test ID`, from the process that runs the command, signed like any delivery. The command prints the outcome and exits with status 1 unless the receiver answered 2xx; a test message is not queued and never retried.',
      headers({
        pattern: TEST_MESSAGE_ID_PATTERN,
        maxLength: 27,
        description: 'The test message id (test_…), also its body id; never an event id.',
      }),
      WebhookTest,
      {
        '2XX': { description: 'Acknowledged: the command reports success.' },
        default: { description: 'Not acknowledged: the command reports the failure; nothing is retried.' },
      },
    ),
  };
}
