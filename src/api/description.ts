// The prose every interface description starts with: the conventions shared by all operations.
export const API_DESCRIPTION = `Read and synchronize the public data of one workspace.

**Authentication.** Send a workspace API key as \`Authorization: Bearer wsk_<id>.<secret>\`. Each key belongs to one workspace and carries scopes, an optional expiry and a rate limit. Any problem with the key (missing, malformed, unknown, expired, revoked) is the same 401 \`authentication_error\`; a suspended workspace or a missing scope is 403 \`permission_error\`; an id of another workspace is 404, exactly like an id that does not exist.

**Idempotency.** Every write requires \`Idempotency-Key\` (8 to 128 visible ASCII characters). A retry with the same key and the same request (method, path, body) within 48 hours returns the first response again with \`Idempotent-Replayed: true\` and changes nothing. The same key with a different request is 409 \`idempotency_key_reused\`; a retry that arrives while the first request is still running is 409 \`idempotency_key_in_use\` with \`Retry-After\`. Keys are per workspace. Only successful writes are recorded, so a request that failed may be retried with the same key.

**Pagination.** Lists return \`{data, page: {limit, has_more, next_cursor}}\`, ordered by \`(updated_at, id)\`. Pass \`page.next_cursor\` as \`cursor\` with the same filters while \`has_more\` is true. Cursors are opaque, signed and bound to the workspace and filters they were issued for; any other cursor is 400 \`invalid_cursor\`. For incremental sync, keep the \`updated_at\` of the last item you stored and ask for \`updated_after\` of it. Every date-time is UTC with millisecond precision, exactly as stored, so it can be sent back as a filter without losing or repeating rows.

**Rate limits.** Every response carries \`RateLimit-Limit\`, \`RateLimit-Remaining\` and \`RateLimit-Reset\` (RFC 3339). A key's window opens with its first request and lasts one minute. Past the limit the answer is 429 \`rate_limit_error\` with \`Retry-After\`; refused requests do nothing.

**Errors.** Every error is \`{"error": {"type", "code", "message", "request_id", "details"?}}\`; \`request_id\` equals the \`X-Request-Id\` header. \`code\` is stable and safe to branch on.`;

export const V2_DESCRIPTION = `**Version 2** adds the workspace, pipeline stages, the catalog, conversations, messages, automations and the events feed, each behind its own scope: \`workspace:read\`, \`contacts:read\` (contacts and pipeline stages), \`contacts:write\`, \`appointments:read\`, \`catalog:read\`, \`conversations:read\`, \`messages:read\` (messages are sensitive and need it even with \`conversations:read\`), \`automations:read\`, \`events:read\`. Contact and appointment objects and operations are exactly those of version 1; v1 and v2 run side by side on the same data.

**Events.** \`GET /v2/events\` lists every change to the workspace's resources — made through this API or inside the product — as \`<resource>.created\`, \`.updated\` or \`.deleted\`, with the resource as it was after the change (a deletion carries only its id) and, for changes made through the API, the \`request_id\` of the request. The order is stable and gap-free: follow \`page.next_cursor\` while \`has_more\` is true; once at the end, resume later with \`after=<id of the last event you processed>\`. Events are kept for 30 days; a client that falls further behind resynchronizes the lists with \`updated_after\`.

Internal data of the product (notes, AI memory, provider payloads and identifiers, private URLs, automation rules, conditions, actions and logs, billing, credentials) never appears in any answer.`;

export const SYNC_GUIDE = `**Guide: sync your contacts.** Keep a copy of a workspace's contacts in your system, deletions included, without missing a change:
1. Create a key with \`contacts:read\` and \`events:read\` only.
2. Note the newest event first: \`GET /v2/events?limit=100\`, following \`page.next_cursor\` to the end; keep the \`id\` of the last event (none yet is fine).
3. Copy every contact: \`GET /v2/contacts?limit=100\`, following \`page.next_cursor\` while \`page.has_more\` is true; store each contact by \`id\`.
4. From then on, poll \`GET /v2/events?after=<last event id>&resource_type=contact\` (every few seconds or minutes): upsert \`contact.created\` and \`contact.updated\` from \`data\` (skip one whose \`updated_at\` is older than what you hold), delete on \`contact.deleted\`, and save the id of each event once applied. A restart resumes from that id.
5. If you were away longer than the 30-day retention, start again at step 2; \`updated_after\` on the list lets you refetch only what changed since the newest \`updated_at\` you hold.
The typed client of this project does steps 2–4 for you (\`clients/typescript\`, example in \`examples/sync-contacts\`).`;
