// OpenAPI documents with every local $ref replaced by what it points to: what a reader of one
// operation sees. A $ref with sibling keywords (OpenAPI 3.1 allows a description beside it) keeps
// them over the target's. Used by the tests, the structure check and the breaking-change gate.
type Json = Record<string, unknown>;

export function dereference<T>(doc: T): T {
  const root = doc as Json;
  const target = (ref: string): unknown => {
    if (!ref.startsWith('#/')) throw new Error(`only local references are published: ${ref}`);
    return ref
      .slice(2)
      .split('/')
      .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce<unknown>((node, part) => {
        if (node === undefined || node === null) throw new Error(`dangling reference ${ref}`);
        return (node as Json)[part];
      }, root);
  };
  const resolve = (node: unknown, seen: readonly string[]): unknown => {
    if (Array.isArray(node)) return node.map((n) => resolve(n, seen));
    if (node === null || typeof node !== 'object') return node;
    const { $ref, ...siblings } = node as Json;
    if (typeof $ref === 'string') {
      if (seen.includes($ref)) throw new Error(`circular reference ${$ref}`);
      const resolved = resolve(target($ref), [...seen, $ref]);
      if (resolved === undefined) throw new Error(`dangling reference ${$ref}`);
      return { ...(resolved as Json), ...(resolve(siblings, seen) as Json) };
    }
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, resolve(v, seen)]));
  };
  const out = resolve(root, []) as Json;
  // What remains under components is what the operations now hold inline.
  const { securitySchemes } = (out.components ?? {}) as Json;
  return { ...out, components: { securitySchemes } } as T;
}
