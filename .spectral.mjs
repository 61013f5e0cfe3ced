// Contract checks of the published interface descriptions (npm run lint:openapi, in CI): the
// standard OpenAPI rules, the OWASP API Security ruleset, and the project's own rules.
import { oas } from '@stoplight/spectral-rulesets';
import owasp from '@stoplight/spectral-owasp-ruleset';
import { createRulesetFunction } from '@stoplight/spectral-core';

// Words naming data that spec 1.5 keeps inside the product.
const INTERNAL_WORDS = new Set([
  'note',
  'notes',
  'memory',
  'payload',
  'payloads',
  'provider',
  'token',
  'tokens',
  'secret',
  'secrets',
  'credential',
  'credentials',
  'password',
  'rule',
  'rules',
  'condition',
  'conditions',
  'action',
  'actions',
  'log',
  'logs',
  'billing',
  'private',
  'internal',
  'metadata',
]);

// The one object that is open on purpose: error.details (free-form by the contract).
const OPEN_ON_PURPOSE = (path) => {
  const names = path.filter((p) => typeof p === 'string');
  const last = names.at(-1) === 'schema' ? names.at(-2) : names.at(-1);
  const parent = names.at(-3);
  return last === 'details' && parent === 'error';
};

const closedObject = createRulesetFunction({ input: { type: 'object' }, options: null }, (schema, _opts, ctx) => {
  if (schema.type !== 'object' && !(Array.isArray(schema.type) && schema.type.includes('object'))) return [];
  if (schema.additionalProperties === false || OPEN_ON_PURPOSE(ctx.path)) return [];
  return [{ message: 'Object schemas must be closed with additionalProperties: false.' }];
});

const publicNames = createRulesetFunction({ input: { type: 'object' }, options: null }, (properties) =>
  Object.keys(properties)
    .filter((name) => name.split(/_|-|(?=[A-Z])/).some((w) => INTERNAL_WORDS.has(w.toLowerCase())))
    .map((name) => ({ message: `Property "${name}" names internal data (spec 1.5).`, path: [name] })),
);

export default {
  extends: [oas, owasp],
  rules: {
    'workspace-api-closed-schemas': {
      description: 'Every object a request or response carries is closed: nothing undeclared is accepted or sent.',
      severity: 'error',
      given: [
        '$.paths..requestBody..schema',
        '$.paths..responses..schema',
        '$.paths..schema..properties.*',
        '$.paths..schema..items',
      ],
      then: { function: closedObject },
    },
    'workspace-api-no-internal-names': {
      description: 'No property is named after data the product keeps internal.',
      severity: 'error',
      given: '$..properties',
      then: { function: publicNames },
    },
    // The API is server-to-server: keys must never sit in browser code (spec 5.3), so it sends no
    // CORS headers at all and browsers refuse cross-origin calls, which is the intent.
    'owasp:api8:2023-define-cors-origin': 'off',
    // Free text (names, descriptions, message text) has no format to declare. Every string is
    // length-bounded (owasp:api4:2023-string-limit stays an error) and every string that has a
    // shape (ids, dates, phones, codes, currencies, event types) declares it.
    'owasp:api4:2023-string-restricted': 'off',
    // The service is self-hosted: its base URL is wherever it is deployed ({base_url} in the spec);
    // the documents name the server that serves them, relatively.
    'oas3-api-servers': 'off',
    'info-contact': 'off',
    // Each operation names its scope in its security requirement. OpenAPI 3.1 allows that for
    // any scheme ("for other security scheme types, the array MAY contain a list of role names");
    // this rule only knows the OAuth2 form, where scopes are declared in the scheme.
    'oas3-operation-security-defined': 'off',
    // Every server of these documents is public (they describe the public API only), so no server
    // carries the x-internal marker this rule asks for — a property name the service never sends.
    'owasp:api9:2023-inventory-access': 'off',
  },
};
