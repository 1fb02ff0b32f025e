import { isUtf8 } from "node:buffer";
import { describe, expect, it } from "vitest";
import {
  decodeUtf8Strictly,
  firstInvalidUtf8,
  invalidUtf8Detail,
  strictUtf8Decoder,
  unpairedSurrogateEscape,
} from "../../src/http/utf8.js";

const bytes = (...values: number[]) => Uint8Array.from(values);

/** The longest prefix that is UTF-8: where a decoder that refuses ill-formed input must stop. */
function longestValidPrefix(input: Uint8Array): number {
  for (let k = input.length; k >= 0; k--) if (isUtf8(input.subarray(0, k))) return k;
  return 0;
}

describe("firstInvalidUtf8", () => {
  it.each([
    ["ASCII", bytes(0x41, 0x7f), -1],
    ["2, 3 and 4 bytes at the range limits", bytes(0xc2, 0x80, 0xdf, 0xbf, 0xe0, 0xa0, 0x80, 0xef, 0xbf, 0xbf), -1],
    ["the last code points before and after the surrogates", bytes(0xed, 0x9f, 0xbf, 0xee, 0x80, 0x80), -1],
    ["U+10000 and U+10FFFF", bytes(0xf0, 0x90, 0x80, 0x80, 0xf4, 0x8f, 0xbf, 0xbf), -1],
    ["a lone continuation byte", bytes(0x41, 0x80), 1],
    ["C0 and C1 (overlong only)", bytes(0xc1, 0xbf), 0],
    ["an overlong 3-byte form", bytes(0x41, 0xe0, 0x9f, 0xbf), 1],
    ["an encoded surrogate", bytes(0xed, 0xa0, 0x80), 0],
    ["an overlong 4-byte form", bytes(0xf0, 0x8f, 0xbf, 0xbf), 0],
    ["past U+10FFFF", bytes(0xf4, 0x90, 0x80, 0x80), 0],
    ["F5 and above", bytes(0xf5, 0x80, 0x80, 0x80), 0],
    ["cut short at the end", bytes(0x41, 0x42, 0xe6, 0x97), 2],
    ["cut short before ASCII", bytes(0xf0, 0x9f, 0x8c, 0x41), 0],
  ])("%s", (_, input, expected) => {
    expect(firstInvalidUtf8(input)).toBe(expected);
    expect(firstInvalidUtf8(input) === -1).toBe(isUtf8(input));
  });

  it("agrees with Node's validator on 20,000 seeded random byte strings, at the longest valid prefix", () => {
    let seed = 0x2545f491;
    const random = () => {
      seed ^= seed << 13;
      seed ^= seed >>> 17;
      seed ^= seed << 5;
      return (seed >>> 0) / 2 ** 32;
    };
    // Mostly well-formed characters, now and then a byte of any value: errors at every depth.
    const pieces = [
      [0x61],
      [0xc3, 0xa9],
      [0xe6, 0x97, 0xa5],
      [0xf0, 0x9f, 0x8c, 0xb1],
      [0xed, 0x9f, 0xbf],
      [0xf4, 0x8f, 0xbf, 0xbf],
    ];
    for (let n = 0; n < 20_000; n++) {
      const out: number[] = [];
      const length = 1 + Math.floor(random() * 12);
      for (let i = 0; i < length; i++) {
        if (random() < 0.15) out.push(Math.floor(random() * 256));
        else out.push(...pieces[Math.floor(random() * pieces.length)]);
      }
      const input = Uint8Array.from(out);
      const valid = isUtf8(input);
      expect(firstInvalidUtf8(input), `bytes ${Buffer.from(input).toString("hex")}`).toBe(
        valid ? -1 : longestValidPrefix(input),
      );
    }
  });
});

describe("invalidUtf8Detail", () => {
  it("is undefined for UTF-8", () => {
    expect(invalidUtf8Detail(Buffer.from('{"a":"naïve 🌱"}'), "the body")).toBeUndefined();
  });

  it("names the offset and the bytes of the ill-formed sequence, with its continuation bytes", () => {
    expect(invalidUtf8Detail(Buffer.from([0x7b, 0x22, 0xed, 0xa0, 0x80, 0x22]), "the body")).toBe(
      "the body is not valid UTF-8: the bytes at offset 2 (ED A0 80) are not a UTF-8 character; send JSON encoded in UTF-8",
    );
    expect(invalidUtf8Detail(Buffer.from([0x22, 0xff, 0x80, 0x80, 0x80, 0x80]), "the message")).toBe(
      "the message is not valid UTF-8: the bytes at offset 1 (FF 80 80 80) are not a UTF-8 character; send JSON encoded in UTF-8",
    );
  });
});

describe("strict decoding", () => {
  it("decodes UTF-8, keeping a byte order mark (JSON.parse then refuses it, as before)", () => {
    expect(decodeUtf8Strictly(Buffer.from("\uFEFF{}"), "the body")).toBe("\uFEFF{}");
    expect(strictUtf8Decoder.decode(Buffer.from("héllo"))).toBe("héllo");
    expect(strictUtf8Decoder.decode()).toBe("");
  });

  it("throws the detail instead of replacing bytes with U+FFFD", () => {
    expect(() => decodeUtf8Strictly(bytes(0x41, 0xff), "the body")).toThrow(
      "the body is not valid UTF-8: the bytes at offset 1 (FF)",
    );
    expect(() => strictUtf8Decoder.decode(bytes(0xc0, 0xaf))).toThrow(
      "the message is not valid UTF-8: the bytes at offset 0 (C0 AF)",
    );
  });
});

describe("unpairedSurrogateEscape", () => {
  it.each([
    ['{"a":"\\ud800"}', 6],
    ['{"\\udc00":1}', 2],
    ['{"a":"\\ud83c\\udf31"}', -1],
    ['{"a":"\\uD83C\\uDF31 and \\ud83c"}', 23],
    ['{"a":"\\ud83c\\u0041"}', 6],
    ['{"a":"\\ud83cx"}', 6],
    ['{"a":"\\\\ud800"}', -1],
    ['{"a":"\\\\\\ud800"}', 8],
    ['{"a":"\\u005cud800"}', -1],
    ['{"a":"caf\\u00e9 \\" \\n"}', -1],
    ['{"a":"\\ud800', 6],
  ])("%s → %d", (text, offset) => {
    expect(unpairedSurrogateEscape(text)).toBe(offset);
  });

  it("refuses a JSON message escaping half a surrogate pair, quoting the escape", () => {
    expect(() => strictUtf8Decoder.decode(Buffer.from('{"\\ud800":1}'))).toThrow(
      "the message is not Unicode text: \\ud800 at offset 2 escapes half of a UTF-16 surrogate pair alone",
    );
    expect(strictUtf8Decoder.decode(Buffer.from('{"a":"\\ud83c\\udf31"}'))).toBe('{"a":"\\ud83c\\udf31"}');
  });
});
