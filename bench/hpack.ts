/**
 * The two halves of HPACK (RFC 7541) that the bench's frame-level gRPC client needs: a decoder for
 * the server's header blocks (dynamic table and Huffman strings), and an encoder of a constant
 * header list that indexes each field once and refers to it afterwards, as Node's and grpc-js's
 * clients do. hpack.js encodes, decodes the Huffman strings and holds the static table; the block
 * decoder is this module's because hpack.js's takes twice as long a block (~2 µs against ~1).
 */
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

interface HpackJs {
  compressor: {
    create(options: { table: { maxSize: number } }): {
      write(fields: { name: string; value: string; huffman: boolean; incremental: boolean }[]): void;
      read(): Buffer | null;
    };
  };
  decoder: { create(): { push(bytes: Buffer): void; decodeStr(): number[] } };
  utils: { stringify(octets: number[]): string };
}
const hpack = require("hpack.js") as HpackJs;
const STATIC_TABLE = (require("hpack.js/lib/hpack/static-table.js") as { table: { name: string; value: string }[] })
  .table;

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
      const lengthAt = at;
      const length = integer(7);
      const lengthBytes = at - lengthAt;
      if (at + length > block.length) throw new HpackError("truncated string");
      const raw = block.toString("latin1", at, at + length);
      at += length;
      if (!huffman) return raw;
      let text = this.huffmanStrings.get(raw);
      if (text === undefined) {
        // hpack.js decodes it (padding checked); only a miss of this cache comes here.
        const strings = hpack.decoder.create();
        strings.push(block.subarray(at - length - lengthBytes, at));
        text = hpack.utils.stringify(strings.decodeStr());
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
  // hpack.js's compressor indexes what it is told to and refers to what its table holds; the
  // fields that would not fit in the peer's table go as literals every time.
  const compressor = hpack.compressor.create({ table: { maxSize: tableSize } });
  let used = 0;
  const headers = fields.map(([name, value]) => {
    const size = name.length + value.length + 32;
    const fits = used + size <= tableSize;
    if (fits) used += size;
    return { name, value, huffman: false, incremental: fits };
  });
  const block = () => {
    compressor.write(headers);
    const pieces: Buffer[] = [];
    for (let piece = compressor.read(); piece !== null; piece = compressor.read()) pieces.push(piece);
    return Buffer.concat(pieces);
  };
  const first = block();
  return { first, next: block() };
}
