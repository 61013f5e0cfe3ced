// The prose every interface description starts with: the conventions shared by all operations.
import { EVENTS_RETENTION, IDEMPOTENCY_WINDOW } from '../shared/documented-durations.js';
import { GUIDES_PATH } from './guides.js';

// Links to the guide pages this service serves beside the reference (guides.ts).
const guide = (name: string, text: string) => `[${text}](${GUIDES_PATH}/${name})`;

export const API_DESCRIPTION = `Read and synchronize the public data of one workspace.

**Authentication.** Send a workspace API key as \`Authorization: Bearer wsk_<id>.<secret>\`. Each key belongs to one workspace and carries scopes, an optional expiry and a rate limit. Any problem with the key (missing, malformed, unknown, expired, revoked) is the same 401 \`authentication_error\`; a suspended workspace or a missing scope is 403 \`permission_error\`; an id of another workspace is 404, exactly like an id that does not exist.

**Idempotency.** Every write requires \`Idempotency-Key\` (8 to 128 visible ASCII characters). A retry with the same key and the same request (method, path, body) within ${IDEMPOTENCY_WINDOW} returns the first response again with \`Idempotent-Replayed: true\` and changes nothing. The same key with a different request is 409 \`idempotency_key_reused\`; a retry that arrives while the first request is still running is 409 \`idempotency_key_in_use\` with \`Retry-After\`. Keys are per workspace. Only successful writes are recorded, so a request that failed may be retried with the same key.

**Pagination and incremental sync.** Lists return \`{data, page: {limit, has_more, next_cursor}}\`, ordered by \`(updated_at, id)\`. Pass \`page.next_cursor\` as \`cursor\` with the same filters while \`has_more\` is true. Cursors are opaque and bound to the workspace and filters they were issued for; any other cursor is 400 \`invalid_cursor\`. For incremental sync, walk the list to its end, keep the \`updated_at\` of the last item, and next time ask for \`updated_after\` of it (to resume in the middle of a walk, use the stored \`next_cursor\`). The stamps of one workspace are issued in commit order, so a change that becomes visible later always sorts after everything already shown: this procedure never misses a change, however many writers and server processes there are. Every date-time is UTC with millisecond precision, exactly as stored, so it can be sent back as a filter.

**Rate limits.** Every response carries \`RateLimit-Limit\`, \`RateLimit-Remaining\` and \`RateLimit-Reset\` (RFC 3339). A key of N per minute may burst N requests, then gets one every 60/N seconds (the quota refills continuously): \`RateLimit-Remaining\` is what would pass right now, \`RateLimit-Reset\` when the whole quota is back. Past the limit the answer is 429 \`rate_limit_error\` with \`Retry-After\`, the seconds until the next request passes; refused requests do nothing. A key and its rotations share one quota.

**Reading your own writes.** A read sees every write whose answer came before it. Deployments that serve reads from replicas also send \`Consistency-Position\` with each successful write; a read that sends it back as the \`Consistency-Position\` header sees that write wherever it is answered, also where the operator lets reads without a token lag (both clients send it by themselves).

**Errors.** Every error is \`{"error": {"type", "code", "message", "request_id", "details"?}}\`; \`request_id\` equals the \`X-Request-Id\` header. \`code\` is stable and safe to branch on.

**Guides.** ${guide('api-conventions', 'API conventions')} (every choice made where this description is silent), ${guide('sync', 'synchronizing')}, ${guide('events', 'the events feed')}, ${guide('webhooks', 'webhooks')}, ${guide('security', 'security')}, ${guide('resources-v2', 'version 2 resources')}, ${guide('scaling', 'scaling')}, ${guide('reliability', 'reliability')} and ${guide('performance', 'performance')}; all of them are listed at [${GUIDES_PATH}](${GUIDES_PATH}).`;

export const V2_DESCRIPTION = `**Version 2** adds the workspace, pipeline stages, the catalog, conversations, messages, automations and the events feed, each behind its own scope: \`workspace:read\`, \`contacts:read\` (contacts and pipeline stages), \`contacts:write\`, \`appointments:read\`, \`catalog:read\`, \`conversations:read\`, \`messages:read\` (messages are sensitive and need it even with \`conversations:read\`), \`automations:read\`, \`events:read\`. Contact and appointment objects and operations are exactly those of version 1; v1 and v2 run side by side on the same data.

**Events.** \`GET /v2/events\` lists every change to the workspace's resources — made through this API or inside the product — as \`<resource>.created\`, \`.updated\` or \`.deleted\`, with the resource as it was after the change (a deletion carries its id, and a contact's also its \`external_id\`) and, for changes made through the API, the \`request_id\` of the request. A key sees the events of the resource types its scopes read on their own routes (messages need \`messages:read\`) and nothing of the others; a deleted resource's earlier events keep their place with only its tombstone as \`data\`. The order is stable and gap-free: follow \`page.next_cursor\` while \`has_more\` is true; once at the end, resume later with \`after=<id of the last event you processed>\`. \`GET /v2/events/head\` gives the feed's current end without reading it. Events are kept for ${EVENTS_RETENTION}; a position older than what is kept answers 410 \`events_expired\` (never a silent gap), and the client resynchronizes.

Internal data of the product (notes, AI memory, provider payloads and identifiers, private URLs, automation rules, conditions, actions and logs, billing, credentials) never appears in any answer.`;

export const SYNC_GUIDE = `**Guide: sync your contacts.** Keep a copy of a workspace's contacts in your system, deletions included, without missing a change (${guide('sync', 'the full recipe, with the reasons')}):
1. Create a key with \`contacts:read\` and \`events:read\` only.
2. Take the feed's position first: \`GET /v2/events/head\`; keep \`data.position\`.
3. Copy every contact: \`GET /v2/contacts?limit=100\`, following \`page.next_cursor\` while \`page.has_more\` is true; store each contact by \`id\` (and the cursor, to resume after a crash).
4. From then on, poll \`GET /v2/events?after=<position>&resource_type=contact\` (every few seconds or minutes): upsert \`contact.created\` and \`contact.updated\` from \`data\`, delete on \`contact.deleted\` (its \`data\` names the \`id\` and the \`external_id\`), and save the id of each event once applied as the new position. A restart resumes from it.
5. If the feed answers 410 \`events_expired\` (away longer than the 30-day retention), start again at step 2 and drop the contacts the new copy did not return.
The typed client of this project does this for you (\`clients/typescript\`, example in \`examples/sync-contacts\`).`;
