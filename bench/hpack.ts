/**
 * The two halves of HPACK (RFC 7541) that the bench's frame-level gRPC client needs: a decoder for
 * the server's header blocks (dynamic table and Huffman strings), and an encoder of a constant
 * header list that indexes each field once and refers to it afterwards, as Node's and grpc-js's
 * clients do. The tables (RFC 7541 appendices A and B) come from hpack.js.
 */
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const HUFFMAN_CODES = (require("hpack.js/lib/hpack/huffman.js") as { encode: [number, number][] }).encode;
const STATIC_TABLE = (require("hpack.js/lib/hpack/static-table.js") as { table: { name: string; value: string }[] })
  .table;

/** The Huffman code as a binary tree: node n's children at 2n and 2n+1; a leaf holds -(symbol + 1). */
const HUFFMAN_TREE = (() => {
  const tree = [0, 0];
  HUFFMAN_CODES.forEach(([bits, code], symbol) => {
    let node = 0;
    for (let bit = bits - 1; bit >= 0; bit--) {
      const slot = 2 * node + ((code >>> bit) & 1);
      if (bit === 0) {
        tree[slot] = -(symbol + 1);
      } else {
        if (tree[slot] === 0) {
          tree[slot] = tree.length / 2;
          tree.push(0, 0);
        }
        node = tree[slot];
      }
    }
  });
  return Int32Array.from(tree);
})();
const EOS = 256;

export class HpackError extends Error {}

/** Decodes one connection's header blocks, in the order the peer sent them. */
export class HpackDecoder {
  /** Newest first: dynamic index 62 is `dynamic[0]`. */
  private readonly dynamic: [string, string][] = [];
  private size = 0;
  private maxSize = 4_096;
  private readonly huffmanStrings = new Map<string, string>();

  decode(block: Buffer): [string, string][] {
    const fields: [string, string][] = [];
    let at = 0;
    const integer = (prefixBits: number): number => {
      const mask = (1 << prefixBits) - 1;
      let value = block[at++] & mask;
      if (value < mask) return value;
      let shift = 0;
      for (;;) {
        if (at >= block.length) throw new HpackError("truncated integer");
        const byte = block[at++];
        value += (byte & 0x7f) * 2 ** shift;
        shift += 7;
        if ((byte & 0x80) === 0) return value;
      }
    };
    const string = (): string => {
      const huffman = (block[at] & 0x80) !== 0;
      const length = integer(7);
      if (at + length > block.length) throw new HpackError("truncated string");
      const raw = block.toString("latin1", at, at + length);
      at += length;
      if (!huffman) return raw;
      let text = this.huffmanStrings.get(raw);
      if (text === undefined) {
        text = huffmanDecode(block.subarray(at - length, at));
        if (this.huffmanStrings.size > 10_000) this.huffmanStrings.clear();
        this.huffmanStrings.set(raw, text);
      }
      return text;
    };
    while (at < block.length) {
      const first = block[at];
      if (first & 0x80) {
        fields.push(this.entry(integer(7)));
      } else if (first & 0x40) {
        const index = integer(6);
        const name = index === 0 ? string() : this.entry(index)[0];
        const field: [string, string] = [name, string()];
        fields.push(field);
        this.add(field);
      } else if (first & 0x20) {
        this.maxSize = integer(5);
        this.evict();
      } else {
        const index = integer(4);
        const name = index === 0 ? string() : this.entry(index)[0];
        fields.push([name, string()]);
      }
    }
    return fields;
  }

  private entry(index: number): [string, string] {
    if (index >= 1 && index <= STATIC_TABLE.length) {
      const { name, value } = STATIC_TABLE[index - 1];
      return [name, value];
    }
    const field = this.dynamic[index - STATIC_TABLE.length - 1];
    if (field === undefined) throw new HpackError(`no header table entry ${index}`);
    return field;
  }

  private add(field: [string, string]): void {
    this.dynamic.unshift(field);
    this.size += field[0].length + field[1].length + 32;
    this.evict();
  }

  private evict(): void {
    while (this.size > this.maxSize) {
      const [name, value] = this.dynamic.pop() as [string, string];
      this.size -= name.length + value.length + 32;
    }
  }
}

function huffmanDecode(bytes: Buffer): string {
  let text = "";
  let node = 0;
  for (const byte of bytes) {
    for (let bit = 7; bit >= 0; bit--) {
      const next = HUFFMAN_TREE[2 * node + ((byte >>> bit) & 1)];
      if (next < 0) {
        const symbol = -next - 1;
        if (symbol === EOS) throw new HpackError("EOS in a Huffman string");
        text += String.fromCharCode(symbol);
        node = 0;
      } else {
        node = next;
      }
    }
  }
  return text;
}

function encodeInteger(value: number, prefixBits: number, flags: number): number[] {
  const mask = (1 << prefixBits) - 1;
  if (value < mask) return [flags | value];
  const bytes = [flags | mask];
  let rest = value - mask;
  while (rest >= 0x80) {
    bytes.push((rest & 0x7f) | 0x80);
    rest = Math.floor(rest / 0x80);
  }
  bytes.push(rest);
  return bytes;
}

function encodeString(text: string): number[] {
  const bytes = Buffer.from(text, "latin1");
  return [...encodeInteger(bytes.length, 7, 0), ...bytes];
}

/**
 * The header blocks for one constant header list: `first` adds every field that is not wholly in
 * the static table to the peer's dynamic table (a literal with incremental indexing), `next`
 * refers to each by index. The peer must decode `first` before any `next` (one connection's
 * blocks are decoded in order), and the fields must fit its table (4,096 bytes unless it says
 * otherwise), or the ones that do not are sent as literals every time.
 */
export function constantHeaderBlocks(
  fields: readonly (readonly [string, string])[],
  tableSize = 4_096,
): { first: Buffer; next: Buffer } {
  // Each field as the first block sends it, and the k-th of those added to the table, if it is.
  const plans: { bytes: number[]; added: number | null }[] = [];
  let used = 0;
  let added = 0;
  for (const [name, value] of fields) {
    const full = STATIC_TABLE.findIndex((entry) => entry.name === name && entry.value === value);
    if (full >= 0) {
      plans.push({ bytes: encodeInteger(full + 1, 7, 0x80), added: null });
      continue;
    }
    const nameIndex = STATIC_TABLE.findIndex((entry) => entry.name === name) + 1;
    const literal = [...(nameIndex > 0 ? [] : encodeString(name)), ...encodeString(value)];
    const size = name.length + value.length + 32;
    if (used + size > tableSize) {
      plans.push({ bytes: [...encodeInteger(nameIndex, 4, 0x00), ...literal], added: null });
      continue;
    }
    used += size;
    plans.push({ bytes: [...encodeInteger(nameIndex, 6, 0x40), ...literal], added: added++ });
  }
  // Once all are in, the last added is dynamic index 62 (STATIC_TABLE.length + 1).
  const next = plans.flatMap(({ bytes, added: k }) =>
    k === null ? bytes : encodeInteger(STATIC_TABLE.length + added - k, 7, 0x80),
  );
  return { first: Buffer.from(plans.flatMap(({ bytes }) => bytes)), next: Buffer.from(next) };
}
