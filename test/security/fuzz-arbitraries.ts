// The building blocks of the generated negative tests (fuzz.test.ts): percent-encoding of raw
// pieces, and fast-check arbitraries for every kind of value an operation takes — parameters
// around and far outside their schemas, odd characters and escapes, raw bytes, dates, integers,
// cursors, body property values, raw bodies and content types.
import fc from 'fast-check';
import { keyOf, rewriteCursor } from '../cursor-forgery.js';
import type { Operation, Param } from './helpers.js';

/** The workspace the run targets and a real next_cursor of each of its lists (by operation label). */
export const fuzzTarget = { workspaceId: '', cursors: new Map<string, string>() };

// ------------------------------------------------------------------------------------------ encoding

/** A piece of a URL: already percent-encoded text, or raw bytes sent as they are. */
export type Piece = string | Buffer;

export const UNRESERVED = /^[A-Za-z0-9\-._~]$/;
/** Percent-encodes the UTF-8 bytes of `s` (lone surrogates become U+FFFD, as in any UTF-8 encoder). */
export function pct(s: string): string {
  let out = '';
  for (const byte of Buffer.from(s, 'utf8')) {
    const ch = String.fromCharCode(byte);
    out += byte < 0x80 && UNRESERVED.test(ch) ? ch : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

export const join = (pieces: Piece[]): Buffer =>
  Buffer.concat(pieces.map((p) => (Buffer.isBuffer(p) ? p : Buffer.from(p, 'latin1'))));

export function fill(op: Operation, v: Record<string, string | Piece>): string {
  return op.template.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const piece = v[name]!;
    return Buffer.isBuffer(piece) ? piece.toString('latin1') : encodeURIComponent(piece);
  });
}

// ------------------------------------------------------------------------------------------ arbitraries

/** Characters that break parsers, databases and comparisons. */
export const ODD_CHAR = fc.constantFrom(
  '\u0000',
  '\u0001',
  '\t',
  '\n',
  '\r',
  '\u001f',
  '\u007f',
  '\u0080',
  '\u0085',
  '\u00a0',
  '\u00ad',
  '\u0301',
  '\u200b',
  '\u200e',
  '\u2028',
  '\u2029',
  '\ufeff',
  '\ufffd',
  '\uffff',
  '\u{1f600}',
  '\u{10ffff}',
  'İ',
  'ß',
  '%',
  '\\',
  "'",
  '"',
  '/',
  '.',
  ' ',
  ',',
  '*',
  '_',
  'a',
  '0',
);

export const unicodeString = (maxLength = 40) =>
  fc.oneof(
    fc.string({ unit: 'binary', maxLength }),
    fc.string({ unit: 'grapheme', maxLength: Math.ceil(maxLength / 2) }),
    fc.string({ unit: ODD_CHAR, maxLength }),
    fc.string({ unit: 'binary-ascii', maxLength }),
  );

/** Stray, invalid, overlong and surrogate percent-escapes and URL delimiters. */
export const ODD_ESCAPE = fc.constantFrom(
  '%',
  '%z',
  '%zz',
  '%0',
  '%00',
  '%0A',
  '%0D%0A',
  '%ff',
  '%FF%FE',
  '%C0%AF',
  '%C0%80',
  '%E0%80%AF',
  '%ED%A0%80',
  '%ED%BF%BF',
  '%F4%90%80%80',
  '%F8%88%80%80%80',
  '%C3%28',
  '%2F',
  '%2e%2e',
  '..',
  '%252F',
  '%u0041',
  '+',
  '%20',
  '&',
  '=',
  '%23',
  '%3F',
  ';',
  '%26',
  '%3D',
);

/** Bytes no URL may carry unencoded (the HTTP parser refuses them). */
export const RAW_BYTES = fc.uint8Array({ minLength: 1, maxLength: 6, min: 0x80, max: 0xff }).map((a) => Buffer.from(a));

export const pad = (n: number, width: number) => String(n).padStart(width, '0');

/** Date-times in every corner of RFC 3339's grammar and beyond: year 0 and 10000, day 32, offsets past ±15:59, leap seconds. */
export const DATE_TIME = fc
  .record({
    y: fc.oneof(fc.integer({ min: 0, max: 9999 }), fc.constantFrom(0, 1, 1969, 1970, 2038, 9999, 10000, 99999)),
    mo: fc.integer({ min: 0, max: 13 }),
    d: fc.integer({ min: 0, max: 32 }),
    h: fc.integer({ min: 0, max: 25 }),
    mi: fc.integer({ min: 0, max: 61 }),
    s: fc.integer({ min: 0, max: 61 }),
    frac: fc.option(fc.stringMatching(/^[0-9]{1,15}$/), { nil: undefined }),
    sep: fc.constantFrom('T', 't', ' ', '_'),
    tz: fc.oneof(
      fc.constantFrom('Z', 'z', '', '+00:00', '-00:00'),
      fc
        .record({
          sign: fc.constantFrom('+', '-'),
          h: fc.integer({ min: 0, max: 30 }),
          m: fc.integer({ min: 0, max: 61 }),
        })
        .map(({ sign, h, m }) => `${sign}${pad(h, 2)}:${pad(m, 2)}`),
    ),
  })
  .map(
    (r) =>
      `${pad(r.y, 4)}-${pad(r.mo, 2)}-${pad(r.d, 2)}${r.sep}${pad(r.h, 2)}:${pad(r.mi, 2)}:${pad(r.s, 2)}` +
      `${r.frac === undefined ? '' : `.${r.frac}`}${r.tz}`,
  );

export const UUID_LIKE = fc
  .uuid()
  .chain((u) =>
    fc.constantFrom(
      u,
      u.toUpperCase(),
      `{${u}}`,
      u.replace(/-/g, ''),
      `${u}0`,
      u.slice(1),
      `urn:uuid:${u}`,
      `${u.slice(0, -1)}g`,
      `${u} `,
      '00000000-0000-0000-0000-000000000000',
      'ffffffff-ffff-ffff-ffff-ffffffffffff',
    ),
  );

export function integerText(schema: any): fc.Arbitrary<string> {
  const min: number = schema.minimum ?? -(2 ** 31);
  const max: number = schema.maximum ?? 2 ** 31 - 1;
  return fc.oneof(
    fc.constantFrom(min - 1, max + 1, 0, -1, 2 ** 31, 2 ** 31 - 1, -(2 ** 31) - 1, 2 ** 53, 2 ** 63).map(String),
    fc.integer({ min: max + 1, max: max + 2 ** 31 }).map(String),
    fc.integer({ min: min - 2 ** 31, max: min - 1 }).map(String),
    fc.double().map(String),
    fc.constantFrom(
      '1.5',
      '1e2',
      '0x10',
      '0b1',
      '0o7',
      ' 1',
      '1 ',
      '+1',
      '-0',
      '١',
      '１',
      '',
      'NaN',
      'Infinity',
      '-Infinity',
      '1_0',
      '1,2',
      `${'0'.repeat(40)}1`,
      '9'.repeat(400),
      'null',
      'true',
      '[1]',
    ),
    fc.integer({ min, max }).map(String),
  );
}

export const BOOLEAN_TEXT = fc.constantFrom(
  'true',
  'false',
  'TRUE',
  'True',
  '1',
  '0',
  'yes',
  'no',
  '',
  'on',
  'null',
  'true ',
  't',
);

/** Text values for a query or path parameter, derived from its schema: around and far outside its bounds. */
export function parameterText(p: Param, op: Operation): fc.Arbitrary<string> {
  const s = p.schema;
  const max: number = s.maxLength ?? 64;
  const arbs: fc.Arbitrary<string>[] = [
    unicodeString(),
    fc.constant(''),
    fc.constant('a'.repeat(max + 1)),
    fc.integer({ min: max + 1, max: Math.max(max + 1, Math.min(max * 10 + 100, 6_000)) }).map((n) => 'a'.repeat(n)),
  ];
  const types = ([] as string[]).concat(s.type ?? []);
  if (Array.isArray(s.enum) && s.enum.length) {
    arbs.push(
      fc.constantFrom(...(s.enum as string[])),
      fc
        .constantFrom(...(s.enum as string[]))
        .chain((v) =>
          fc.constantFrom(v.toUpperCase(), ` ${v}`, `${v} `, `${v}\u0000`, v.slice(0, -1), `${v}${v}`, `${v},${v}`),
        ),
    );
  }
  if (s.format === 'date-time')
    arbs.push(
      DATE_TIME,
      DATE_TIME,
      fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
    );
  if (s.format === 'uuid') arbs.push(UUID_LIKE, UUID_LIKE);
  if (s.pattern) {
    const valid = fc.stringMatching(new RegExp(s.pattern)).filter((v) => v.length <= max);
    arbs.push(
      valid,
      fc.tuple(valid, ODD_CHAR).map(([v, c]) => v + c),
    );
  }
  if (types.includes('integer') || types.includes('number')) arbs.push(integerText(s), integerText(s));
  if (types.includes('boolean')) arbs.push(BOOLEAN_TEXT, BOOLEAN_TEXT);
  if (p.name === 'cursor') arbs.push(cursorText(op), cursorText(op));
  return fc.oneof(...arbs);
}

/**
 * Cursors: real ones (of this list and of others), truncated, tampered and forged, and this list's
 * moved to any key with a check that holds, as anyone can move one: keys of every shape, and keys of
 * the list's own shape with one part broken.
 */
export function cursorText(op: Operation): fc.Arbitrary<string> {
  const own = fuzzTarget.cursors.get(op.label);
  const all = [...fuzzTarget.cursors.values()];
  const arbs: fc.Arbitrary<string>[] = [
    fc.tuple(fc.base64String({ maxLength: 80 }), fc.base64String({ maxLength: 30 })).map(([a, b]) => `${a}.${b}`),
    fc
      .record({
        r: fc.constantFrom('contacts', 'events', 'messages'),
        k: fc.array(unicodeString(10), { maxLength: 3 }),
      })
      .map(
        (p) =>
          `${Buffer.from(JSON.stringify({ ...p, w: fuzzTarget.workspaceId, f: 'x' })).toString('base64url')}.${'A'.repeat(22)}`,
      ),
    fc.constantFrom('.', '..', 'a.', '.a', `${'A'.repeat(1024)}`, `${'A'.repeat(1025)}`),
  ];
  if (all.length) arbs.push(fc.constantFrom(...all));
  if (own) {
    arbs.push(
      fc.constant(own),
      fc.integer({ min: 1, max: own.length - 1 }).map((n) => own.slice(0, n)),
      fc
        .tuple(fc.integer({ min: 0, max: own.length - 1 }), fc.constantFrom('A', '-', '_', '.', '='))
        .map(([i, c]) => own.slice(0, i) + c + own.slice(i + 1)),
      fc.constant(`${own}=`),
      fc
        .array(fc.oneof(unicodeString(30), DATE_TIME, UUID_LIKE, fc.integer(), fc.constant(null)), { maxLength: 3 })
        .map((key) => rewriteCursor(own, key)),
      fc
        .tuple(fc.nat(keyOf(own).length - 1), fc.oneof(unicodeString(30), DATE_TIME, UUID_LIKE, fc.constant('')))
        .map(([i, part]) => rewriteCursor(own, keyOf(own).with(i, part))),
    );
  }
  return fc.oneof(...arbs);
}

/** A URL piece for a parameter: mostly its percent-encoded text, sometimes odd escapes or raw bytes. */
export const parameterPiece = (p: Param, op: Operation): fc.Arbitrary<Piece> =>
  fc.oneof(
    { weight: 8, arbitrary: parameterText(p, op).map(pct) },
    { weight: 2, arbitrary: fc.tuple(parameterText(p, op), ODD_ESCAPE).map(([s, e]) => pct(s) + e) },
    {
      weight: 1,
      arbitrary: fc.tuple(parameterText(p, op), RAW_BYTES).map(([s, b]) => Buffer.concat([Buffer.from(pct(s)), b])),
    },
  );

/** JSON values that break a body property's schema (or, by chance, satisfy it). */
export function propertyValue(schema: any): fc.Arbitrary<unknown> {
  const max: number = schema.maxLength ?? 64;
  const types = ([] as string[]).concat(schema.type ?? []);
  const arbs: fc.Arbitrary<unknown>[] = [
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 3 }),
    fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 }),
    unicodeString(),
    fc.constant(''),
    fc.constant('x'.repeat(max + 1)),
    fc.integer({ min: max + 1, max: max * 20 }).map((n) => 'é'.repeat(n)),
    fc.tuple(unicodeString(10), fc.constantFrom('\u0000', '\u0000\u0000', '\u0001')).map(([a, b]) => a + b + a),
  ];
  if (Array.isArray(schema.enum)) arbs.push(fc.constantFrom(...(schema.enum as unknown[])));
  if (schema.format === 'email') {
    arbs.push(
      fc.emailAddress(),
      fc.constantFrom('a@', '@b.co', 'a@b', 'a b@c.de', 'ä@ö.de', 'a@b.co\n', 'a@@b.co', '"a"@b.co', 'a@[127.0.0.1]'),
      fc.integer({ min: 250, max: 400 }).map((n) => `${'a'.repeat(64)}@${'b'.repeat(n - 69)}.com`),
    );
  }
  if (schema.pattern) {
    arbs.push(
      fc.stringMatching(new RegExp(schema.pattern)),
      fc.stringMatching(/^\+?[0-9 ()-]{0,25}$/),
      fc.tuple(fc.stringMatching(new RegExp(schema.pattern)), ODD_CHAR).map(([v, c]) => v + c),
    );
  }
  if (types.includes('integer')) arbs.push(integerText(schema).map(Number));
  return fc.oneof(...arbs);
}

/** Request bodies that are not what the operation takes: not JSON, other JSON types, odd encodings. */
export const RAW_BODIES: fc.Arbitrary<Buffer> = fc.oneof(
  fc
    .constantFrom(
      '',
      ' ',
      '{',
      '}',
      '{"name":',
      '{"name":"a",}',
      "{'name':'a'}",
      '{"name":"a"} x',
      '{"name":"a"}{"name":"b"}',
      '{"name":NaN,"email":"a@b.co"}',
      '{"name":1e400,"email":"a@b.co"}',
      '{"name":"a","name":1,"email":"a@b.co"}',
      '{"name":"\\ud800","email":"a@b.co"}',
      '{"name":"\\udfff\\ud800","email":"a@b.co"}',
      '{"name":"\\u0000","email":"a@b.co"}',
      '{"name":"a\\u0000b","email":"a@b.co","origin":"\\u0000"}',
      '{"__proto__":{"x":1},"name":"a","email":"a@b.co"}',
      '{"constructor":{"prototype":{"x":1}},"name":"a","email":"a@b.co"}',
      '/* comment */ {"name":"a","email":"a@b.co"}',
      '\ufeff{"name":"a","email":"a@b.co"}',
      'null',
      'true',
      '0',
      '"name"',
      '[]',
      '[{"name":"a","email":"a@b.co"}]',
      `${'['.repeat(5_000)}${']'.repeat(5_000)}`,
      `${'{"a":'.repeat(3_000)}1${'}'.repeat(3_000)}`,
    )
    .map((s) => Buffer.from(s, 'utf8')),
  fc.jsonValue({ maxDepth: 3 }).map((v) => Buffer.from(JSON.stringify(v) ?? 'null', 'utf8')),
  unicodeString(60).map((s) => Buffer.from(s, 'utf8')),
  RAW_BYTES.map((b) => Buffer.concat([Buffer.from('{"name":"'), b, Buffer.from('","email":"a@b.co"}')])),
  fc.constant(Buffer.from(JSON.stringify({ name: 'a', email: 'a@b.co' }), 'utf16le')),
  fc.constant(Buffer.from(JSON.stringify({ name: 'x'.repeat(1_100_000), email: 'a@b.co' }), 'utf8')),
);

export const CONTENT_TYPES = fc.constantFrom(
  'text/plain',
  'application/json; charset=utf-16',
  'application/json;charset=latin1',
  'application/json; charset="utf-8"',
  'APPLICATION/JSON',
  'application/json-patch+json',
  'application/merge-patch+json',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/jsonx',
  'application/json, text/plain',
  'json',
  ';',
  '',
);
