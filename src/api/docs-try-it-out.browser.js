// Runs in the browser, on the reference page (/docs): what "Try it out" needs for this API, which
// Swagger UI has no option for. The page's own initializer starts Swagger UI when the window has
// loaded, after this script ran, so wrapping SwaggerUIBundle here adds to the configuration it
// gets.
//
// 1. A parameter's `example` documents it ("Example : ..." beside the field) but is never its
//    value: Swagger UI fills every field with its example for OpenAPI 3 (swagger-ui#8276), and
//    an integrator's first "Execute" of a list then silently filtered by an invented date.
// 2. Every write needs an Idempotency-Key: left empty, the field gets a fresh UUID for each
//    request (shown in it, and in the request's curl); a key the user typed is sent as typed.
/* global window */
(function () {
  'use strict';

  const IDEMPOTENCY_KEY = 'Idempotency-Key';

  /** The parameter (an Immutable.Map) without the values Swagger UI would pre-fill from. */
  function withoutExamples(param) {
    if (!param || typeof param.delete !== 'function' || param.get('in') === 'body') return param;
    let stripped = param.delete('example').delete('examples');
    if (stripped.get('schema')) {
      stripped = stripped.update('schema', (schema) => schema.delete('example').delete('examples'));
    }
    if (stripped.get('content')) {
      stripped = stripped.update('content', (content) =>
        content.map((media) => media.delete('example').delete('examples')),
      );
    }
    return stripped;
  }

  function isIdempotencyKey(param) {
    return Boolean(param) && param.get('in') === 'header' && param.get('name') === IDEMPOTENCY_KEY;
  }

  function tryItOutPlugin() {
    return {
      wrapComponents: {
        // ParameterRow takes its initial value from what specSelectors.parameterWithMetaByIdentity
        // returns; the row it renders still gets the full parameter (`param`), whose example it
        // shows as documentation.
        parameterRow: (Original, system) =>
          function ParameterRowWithoutPrefill(props) {
            const specSelectors = {
              ...props.specSelectors,
              parameterWithMetaByIdentity: (...args) =>
                withoutExamples(props.specSelectors.parameterWithMetaByIdentity(...args)),
            };
            const param = isIdempotencyKey(props.param)
              ? props.param.update(
                  'description',
                  (text) => `${text ?? ''}\n\n*Try it out:* unless you type one, each request gets a fresh UUID here.`,
                )
              : props.param;
            return system.React.createElement(Original, { ...props, specSelectors, param });
          },
      },
      statePlugins: {
        spec: {
          wrapActions: {
            // "Execute" validates the parameters first, then builds the request from their values
            // (a required one left empty stops it before anything is sent): the key is filled in
            // here, where the user sees it in its field.
            validateParams: (original, system) =>
              function (pathMethod, ...rest) {
                fillIdempotencyKey(system, pathMethod);
                return original(pathMethod, ...rest);
              },
          },
        },
      },
    };
  }

  // The keys this page generated: a field holding one gets a fresh key for the next request, a
  // field holding anything else keeps what the user typed.
  const generated = new Set();

  function fillIdempotencyKey(system, pathMethod) {
    const parameters = system.specSelectors
      .specJsonWithResolvedSubtrees()
      .getIn(['paths', ...pathMethod, 'parameters']);
    const param = parameters && parameters.find(isIdempotencyKey);
    if (!param) return;
    const value = system.specSelectors.parameterWithMetaByIdentity(pathMethod, param).get('value');
    if (value !== undefined && value !== '' && !generated.has(value)) return;
    const key = freshUuid();
    generated.add(key);
    // The same identity as the field's own changes, so the field shows the key.
    system.specActions.changeParamByIdentity(pathMethod, param, key);
  }

  /** A version 4 UUID; randomUUID exists only on HTTPS and localhost, getRandomValues everywhere. */
  function freshUuid() {
    if (typeof window.crypto.randomUUID === 'function') return window.crypto.randomUUID();
    const bytes = window.crypto.getRandomValues(new Uint8Array(16));
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  }

  const original = window.SwaggerUIBundle;
  function SwaggerUIBundleForThisApi(config) {
    return original({ ...config, plugins: [...(config.plugins || []), tryItOutPlugin] });
  }
  // The initializer also reads SwaggerUIBundle.presets and .plugins.
  window.SwaggerUIBundle = Object.assign(SwaggerUIBundleForThisApi, original);
})();
