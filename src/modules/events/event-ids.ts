// Event ids: a feed position (the stamp of the event's transaction and its sequence, see
// db/code/03_sync_clock.sql) encrypted with a key of this installation, so an id says nothing about when
// or how often anything happened — not in other workspaces, not in groups the key may not read.
//
// One AES-128 block (a keyed permutation of 16 bytes, no padding, no IV: the same position always
// gives the same id) holds the stamp (48 bits, milliseconds until the year 10889), the sequence
// (48 bits) and 32 bits of the workspace id: an id of another workspace, or any string made up,
// decrypts to a tag that does not match and is refused like a malformed one.
import { createCipheriv, createDecipheriv, hkdfSync, type Cipher, type Decipher } from 'node:crypto';

/** (stamp in milliseconds, sequence) as decimal strings: where an event stands in its feed. */
export type EventPosition = readonly [string, string];

export const MAX_SEQ = 2n ** 48n - 1n;

/** The documented shape of an event id: "evt_" and 22 base64url characters. */
export const EVENT_ID_PATTERN = '^evt_[A-Za-z0-9_-]{22}$';
/**
 * Ids of the format that came before encrypted positions (evt_<transaction>_<sequence>): decoded
 * here, and answered only in a workspace that issued them (events.repository.ts, legacyPosition).
 */
const LEGACY_ID = /^evt_([0-9]{1,20})_([0-9]{1,20})$/;
const MAX_LEGACY_TX = 2n ** 64n - 1n;
const MAX_LEGACY_SEQ = 2n ** 63n - 1n;

export type ParsedEventId =
  { kind: 'position'; position: EventPosition } | { kind: 'legacy'; txId: string; seq: string } | null;

export class EventIdCodec {
  // One cipher each way for the codec's life: ECB with whole blocks and no padding keeps no state
  // between blocks, so update() of one block is that block's permutation, and making a cipher per
  // id cost five times the encryption itself (100 ids a feed page).
  readonly #encrypt: Cipher;
  readonly #decrypt: Decipher;
  /** The tag of the workspace last seen: a page's ids are all of one workspace. */
  #tag: { workspaceId: string; bytes: Buffer } = { workspaceId: '', bytes: Buffer.alloc(4) };

  /** `secret`: the installation's event id secret, kept in the store (never rotated: ids last). */
  constructor(secret: string) {
    const key = Buffer.from(hkdfSync('sha256', secret, 'workspace-api', 'event ids v1', 16));
    this.#encrypt = createCipheriv('aes-128-ecb', key, null).setAutoPadding(false);
    this.#decrypt = createDecipheriv('aes-128-ecb', key, null).setAutoPadding(false);
  }

  encode(workspaceId: string, position: EventPosition): string {
    return this.encodeAll(workspaceId, [position])[0]!;
  }

  /** The ids of many positions of one workspace: one call to the cipher for all their blocks. */
  encodeAll(workspaceId: string, positions: readonly EventPosition[]): string[] {
    const tag = this.#tagOf(workspaceId);
    const blocks = Buffer.allocUnsafe(16 * positions.length);
    positions.forEach(([stamp, seq], i) => {
      blocks.writeUIntBE(Number(stamp), 16 * i, 6);
      blocks.writeUIntBE(Number(seq), 16 * i + 6, 6);
      tag.copy(blocks, 16 * i + 12);
    });
    const encrypted = this.#encrypt.update(blocks);
    return positions.map((_, i) => `evt_${encrypted.toString('base64url', 16 * i, 16 * i + 16)}`);
  }

  #tagOf(workspaceId: string): Buffer {
    if (this.#tag.workspaceId !== workspaceId) this.#tag = { workspaceId, bytes: workspaceTag(workspaceId) };
    return this.#tag.bytes;
  }

  /** What `id` names in the feed of `workspaceId`, or null when it names nothing there. */
  decode(workspaceId: string, id: string): ParsedEventId {
    if (id.length === 26 && id.startsWith('evt_')) {
      const bytes = Buffer.from(id.slice(4), 'base64url');
      // base64url decoding forgives stray characters: only an id exactly as issued is one.
      if (bytes.length === 16 && bytes.toString('base64url') === id.slice(4)) {
        const block = this.#decrypt.update(bytes);
        if (block.subarray(12).equals(this.#tagOf(workspaceId))) {
          return { kind: 'position', position: [String(block.readUIntBE(0, 6)), String(block.readUIntBE(6, 6))] };
        }
      }
    }
    const legacy = LEGACY_ID.exec(id);
    if (legacy && BigInt(legacy[1]!) <= MAX_LEGACY_TX && BigInt(legacy[2]!) <= MAX_LEGACY_SEQ) {
      return { kind: 'legacy', txId: legacy[1]!, seq: legacy[2]! };
    }
    return null;
  }
}

/** The first 4 bytes of the workspace's UUID. */
function workspaceTag(workspaceId: string): Buffer {
  return Buffer.from(workspaceId.replaceAll('-', '').slice(0, 8), 'hex');
}
