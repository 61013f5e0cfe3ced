// The prose every interface description starts with: the conventions shared by all operations.
export const API_DESCRIPTION = `Read and synchronize the public data of one workspace.

**Authentication.** Send a workspace API key as \`Authorization: Bearer wsk_<id>.<secret>\`. Each key belongs to one workspace and carries scopes, an optional expiry and a rate limit. Any problem with the key (missing, malformed, unknown, expired, revoked) is the same 401 \`authentication_error\`; a suspended workspace or a missing scope is 403 \`permission_error\`; an id of another workspace is 404, exactly like an id that does not exist.

**Idempotency.** Every write requires \`Idempotency-Key\` (8 to 128 visible ASCII characters). A retry with the same key and the same request (method, path, body) within 48 hours returns the first response again with \`Idempotent-Replayed: true\` and changes nothing. The same key with a different request is 409 \`idempotency_key_reused\`; a retry that arrives while the first request is still running is 409 \`idempotency_key_in_use\` with \`Retry-After\`. Keys are per workspace. Only successful writes are recorded, so a request that failed may be retried with the same key.

**Pagination.** Lists return \`{data, page: {limit, has_more, next_cursor}}\`, ordered by \`(updated_at, id)\`. Pass \`page.next_cursor\` as \`cursor\` with the same filters while \`has_more\` is true. Cursors are opaque, signed and bound to the workspace and filters they were issued for; any other cursor is 400 \`invalid_cursor\`. For incremental sync, keep the \`updated_at\` of the last item you stored and ask for \`updated_after\` of it. Every date-time is UTC with millisecond precision, exactly as stored, so it can be sent back as a filter without losing or repeating rows.

**Rate limits.** Every response carries \`RateLimit-Limit\`, \`RateLimit-Remaining\` and \`RateLimit-Reset\` (RFC 3339). A key's window opens with its first request and lasts one minute. Past the limit the answer is 429 \`rate_limit_error\` with \`Retry-After\`; refused requests do nothing.

**Errors.** Every error is \`{"error": {"type", "code", "message", "request_id", "details"?}}\`; \`request_id\` equals the \`X-Request-Id\` header. \`code\` is stable and safe to branch on.`;
