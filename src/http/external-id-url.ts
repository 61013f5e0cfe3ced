/**
 * /v1/contacts/external/hub/123 as /v1/contacts/external/hub%2F123: the contract's external_id
 * pattern allows "/", and a client that sends it raw means the same contact as one that encodes it.
 */
export function encodeExternalIdSlashes(url: string): string {
  const match = /^(\/v[12]\/contacts\/external\/)([^?]*)(\?.*)?$/.exec(url);
  if (!match || !match[2]!.includes('/')) return url;
  return `${match[1]}${match[2]!.replaceAll('/', '%2F')}${match[3] ?? ''}`;
}
