// The breaking-change gate of .ci/run (scripts/openapi-breaking.ts) on both versions: the committed
// documents pass against their published baselines, and each kind of breaking change, made on a
// copy of the committed document, is found (compared with the committed document itself, so these
// tests hold whatever the baseline holds). Additions and removed error statuses pass.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { breakingChanges, GATED, gatedDocuments } from '../scripts/openapi-breaking.js';

type Json = Record<string, any>;

const committed = (v: string): Json =>
  JSON.parse(readFileSync(new URL(`../docs/openapi/${v}.json`, import.meta.url), 'utf8')) as Json;

/** The breaking changes `edit` makes to the committed document of `v` (as published: with components). */
function changesOf(v: string, edit: (doc: Json) => void): string[] {
  const after = committed(v);
  edit(after);
  return breakingChanges(committed(v), after);
}

for (const { version, published } of GATED) {
  test(`${version}: the committed document has no breaking change since ${published} (the gate of .ci/run)`, () => {
    const { baseline, current } = gatedDocuments(version);
    assert.deepEqual(breakingChanges(baseline, current), []);
  });

  describe(`${version}: the gate finds`, () => {
    const list = `/${version}/contacts`;
    test('an operation removed', () => {
      const found = changesOf(version, (doc) => delete doc.paths[`/${version}/contacts/{id}`].get);
      assert.ok(found.includes(`remove paths//${version}/contacts/{id}/get`), found.join('\n'));
    });

    test('a required query parameter added, and an optional one made required', () => {
      const added = changesOf(version, (doc) =>
        doc.paths[list].get.parameters.push({
          name: 'region',
          in: 'query',
          required: true,
          schema: { type: 'string' },
        }),
      );
      assert.ok(
        added.some((l) => l.startsWith(`add paths//${version}/contacts/get/parameters/`)),
        added.join('\n'),
      );
      const required = changesOf(version, (doc) => {
        const status = doc.paths[list].get.parameters.find((p: Json) => p.name === 'status');
        status.required = true;
      });
      assert.ok(required.length > 0);
    });

    test('a required request header added', () => {
      const found = changesOf(version, (doc) =>
        doc.paths[list].get.parameters.push({
          name: 'X-Tenant',
          in: 'header',
          required: true,
          schema: { type: 'string' },
        }),
      );
      assert.ok(
        found.some((l) => l.startsWith(`add paths//${version}/contacts/get/parameters/`)),
        found.join('\n'),
      );
    });

    test('RateLimit-Reset changed from a date-time to an integer (a change api-smart-diff leaves unclassified)', () => {
      const found = changesOf(version, (doc) => {
        doc.components.headers['RateLimit-Reset'].schema = { type: 'integer', minimum: 0 };
      });
      assert.ok(
        found.includes(
          `replace paths//${version}/contacts/get/responses/200/headers/RateLimit-Reset/schema (string date-time -> integer)`,
        ),
        found.join('\n'),
      );
    });

    test('a response header removed', () => {
      const found = changesOf(version, (doc) => delete doc.paths[list].get.responses['200'].headers['X-Request-Id']);
      assert.ok(
        found.includes(`remove paths//${version}/contacts/get/responses/200/headers/X-Request-Id`),
        found.join('\n'),
      );
    });

    test('a response property removed', () => {
      const found = changesOf(version, (doc) => {
        const contact = doc.components.schemas.Contact;
        delete contact.properties.email;
        contact.required = contact.required?.filter((p: string) => p !== 'email');
      });
      assert.ok(
        found.some((l) => l.includes(`${version}/contacts/{id}/get/responses/200`) && /email$/.test(l)),
        found.join('\n'),
      );
    });
  });

  test(`${version}: additions, and an error status no longer documented, pass`, () => {
    const found = changesOf(version, (doc) => {
      const op = doc.paths[`/${version}/contacts`].get;
      op.parameters.push({ name: 'origin', in: 'query', schema: { type: 'string', maxLength: 10 } });
      op.responses['418'] = op.responses['401'];
      delete op.responses['403'];
      doc.components.schemas.Contact.properties.nickname = { type: 'string', maxLength: 10 };
      doc.components.headers['X-Request-Id'].description = 'Said otherwise.';
    });
    assert.deepEqual(found, []);
  });
}

describe('v2: the gate finds', () => {
  test("an event's data removed (ContactEvent, one alternative of the Event union)", () => {
    const found = changesOf('v2', (doc) => {
      const event = doc.components.schemas.ContactEvent;
      delete event.properties.data;
      event.required = event.required?.filter((p: string) => p !== 'data');
    });
    assert.ok(
      found.some((l) => l.startsWith('remove paths//v2/events/get/responses/200') && /data$/.test(l)),
      found.join('\n'),
    );
  });

  test("a property removed from one branch of an event's data as a union (api-smart-diff calls it non-breaking)", () => {
    const asUnion = (doc: Json, dropEmail: boolean) => {
      const contact = structuredClone(doc.components.schemas.Contact);
      if (dropEmail) delete contact.properties.email;
      doc.components.schemas.ContactEvent.properties.data = {
        oneOf: [contact, { $ref: '#/components/schemas/ContactTombstone' }],
      };
    };
    const before = committed('v2');
    asUnion(before, false);
    const after = committed('v2');
    asUnion(after, true);
    const found = breakingChanges(before, after);
    assert.ok(
      found.some((l) => l.startsWith('remove paths//v2/events/get/responses/200') && /oneOf\[0\]\/email$/.test(l)),
      found.join('\n'),
    );
  });
});
