// Standard Webhooks signatures (https://www.standardwebhooks.com): the secret is "whsec_" and the
// base64 of random bytes, those bytes are the HMAC-SHA256 key, and the signed content is
// "<webhook-id>.<webhook-timestamp>.<body>". The header carries one "v1,<base64>" per secret that
// signs, separated by spaces: during a rotation's grace period, the new and the previous one.
import { createHmac, randomBytes } from 'node:crypto';

const SECRET_PREFIX = 'whsec_';
/** 32 random bytes: the standard asks for 24 to 64. */
const SECRET_BYTES = 32;

export function newWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64');
}

function signingKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
}

/** The value of the webhook-signature header for this message, signed by each secret in turn. */
export function signatureHeader(
  messageId: string,
  timestampSeconds: number,
  body: string,
  secrets: readonly string[],
): string {
  const content = `${messageId}.${timestampSeconds}.${body}`;
  return secrets
    .map((secret) => `v1,${createHmac('sha256', signingKey(secret)).update(content).digest('base64')}`)
    .join(' ');
}
