// The contract check the harness applies to every response must be able to fail: an undocumented
// status, a missing documented header and a body with an undeclared property are all refused.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertMatchesContract } from './contract.js';
import { Contact } from '../src/modules/contacts/contacts.schemas.js';
import { sampleOf } from './samples.js';

const headers = (extra: Record<string, string> = {}) =>
  new Headers({
    'x-request-id': 'req_abcdefghijklmnop',
    'ratelimit-limit': '600',
    'ratelimit-remaining': '599',
    'ratelimit-reset': '2026-11-22T06:05:43.123Z',
    'x-content-type-options': 'nosniff',
    ...extra,
  });

const page = { data: [], page: { limit: 50, has_more: false, next_cursor: null } };

test('a documented response passes', () => {
  assertMatchesContract('GET', '/v1/contacts?limit=50', 200, headers(), page);
});

test('an undocumented status, a missing header or an undeclared property fails', () => {
  assert.throws(() => assertMatchesContract('GET', '/v1/contacts', 201, headers(), page), /not documented/);
  const noRequestId = headers();
  noRequestId.delete('x-request-id');
  assert.throws(() => assertMatchesContract('GET', '/v1/contacts', 200, noRequestId, page), /X-Request-Id is missing/);
  assert.throws(
    () => assertMatchesContract('GET', '/v1/contacts', 200, headers(), { ...page, total: 3 }),
    /breaks the documented schema/,
  );
  const leaky = {
    data: [sampleOf(Contact, { name: 'A', status: 'talking', notes: 'internal' })],
    page: page.page,
  };
  assert.throws(
    () => assertMatchesContract('GET', '/v2/contacts', 200, headers(), leaky),
    /breaks the documented schema/,
  );
});

test('errors on paths outside the documents still use the error object', () => {
  assert.throws(
    () => assertMatchesContract('GET', '/nowhere', 404, headers(), { message: 'Not Found' }),
    /error schema/,
  );
});

test('an error code the operation does not list for that status fails', () => {
  const error = (code: string) => ({
    error: { type: 'invalid_request', code, message: 'm', request_id: 'req_abcdefghijklmnop' },
  });
  assertMatchesContract('GET', '/v2/contacts', 400, headers(), error('invalid_cursor'));
  assert.throws(
    () => assertMatchesContract('GET', '/v2/contacts', 400, headers(), error('invalid_json')),
    /error code invalid_json is not documented for this status/,
  );
  assert.throws(
    () =>
      assertMatchesContract(
        'GET',
        '/v2/contacts/0b8a5e8e-3a52-4f36-9d6f-2a0f1c5e7d41',
        400,
        headers(),
        error('invalid_cursor'),
      ),
    /error code invalid_cursor is not documented/,
  );
});
