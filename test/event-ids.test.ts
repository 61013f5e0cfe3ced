// Event ids are kept by followers for as long as they follow: an id issued once must name the same
// position in every later release, and the codec must hold no state between ids (it reuses one
// cipher for speed).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { EventIdCodec } from '../src/modules/events/event-ids.js';

const WORKSPACE = '6f1c2a9e-0000-4000-8000-00000000abcd';
const OTHER_WORKSPACE = '7a2d3b0f-0000-4000-8000-00000000abcd';
const SECRET = 'a fixed secret for the test';

describe('event ids', () => {
  test('the ids issued by earlier releases still decode to their positions, and are issued alike', () => {
    // Issued by the codec that made a cipher per id, before it kept one.
    const issued: [string, [string, string]][] = [
      ['evt_wZZ0BKnrBWZ6JWG4gzOFBg', ['1700000000000', '3']],
      ['evt_skSWZq3qYKBhS1w_VI7p_g', ['281474976710655', '281474976710655']],
    ];
    const codec = new EventIdCodec(SECRET);
    for (const [id, position] of issued) {
      assert.deepEqual(codec.decode(WORKSPACE, id), { kind: 'position', position });
      assert.equal(codec.encode(WORKSPACE, position), id);
    }
  });

  test('thousands of ids in a row, interleaved with decoding and refusals, each round-trip alone', () => {
    const codec = new EventIdCodec(SECRET);
    const fresh = () => new EventIdCodec(SECRET);
    for (let i = 0; i < 5_000; i += 1) {
      const position = [String(1_700_000_000_000 + i * 7919), String(i % 97)] as const;
      const id = codec.encode(WORKSPACE, position);
      assert.equal(id, fresh().encode(WORKSPACE, position));
      assert.equal(codec.decode(OTHER_WORKSPACE, id), null);
      // One character changed: a block whose workspace tag no longer matches (2^-32 of a chance otherwise).
      const tampered = `${id.slice(0, 10)}${id[10] === 'A' ? 'B' : 'A'}${id.slice(11)}`;
      assert.equal(codec.decode(WORKSPACE, tampered), null);
      assert.deepEqual(codec.decode(WORKSPACE, id), { kind: 'position', position: [...position] });
    }
  });

  test('ids encoded together are the ids encoded one by one', () => {
    const codec = new EventIdCodec(SECRET);
    const positions = Array.from({ length: 101 }, (_, i) => [String(1_700_000_000_000 + i), String(i * 3)] as const);
    const together = codec.encodeAll(WORKSPACE, positions);
    assert.deepEqual(
      together,
      positions.map((p) => new EventIdCodec(SECRET).encode(WORKSPACE, p)),
    );
    assert.deepEqual(codec.encodeAll(WORKSPACE, []), []);
    assert.deepEqual(codec.encodeAll(OTHER_WORKSPACE, positions.slice(0, 1)), [
      codec.encode(OTHER_WORKSPACE, positions[0]!),
    ]);
  });
});
