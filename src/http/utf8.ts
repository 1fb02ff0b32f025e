/**
 * JSON bodies are read as UTF-8 strictly (RFC 8259 §8.1): a byte sequence that is not UTF-8 is
 * refused where it starts, instead of being replaced by U+FFFD. Replacing it would store a value
 * the client never sent, and make two different byte strings one alt_id.
 */

/** The offset of the first byte that does not start a well-formed UTF-8 sequence (RFC 3629 §4), or -1. */
export function firstInvalidUtf8(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i];
    if (b < 0x80) {
      i++;
      continue;
    }
    // The sequence's length and the range of its second byte (overlongs, surrogates and code
    // points past U+10FFFF are excluded there); later bytes are 80..BF.
    let length: number;
    let low = 0x80;
    let high = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) length = 2;
    else if (b >= 0xe0 && b <= 0xef) {
      length = 3;
      if (b === 0xe0) low = 0xa0;
      if (b === 0xed) high = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      length = 4;
      if (b === 0xf0) low = 0x90;
      if (b === 0xf4) high = 0x8f;
    } else return i;
    if (i + length > bytes.length) return i;
    const second = bytes[i + 1];
    if (second < low || second > high) return i;
    for (let k = 2; k < length; k++) {
      const next = bytes[i + k];
      if (next < 0x80 || next > 0xbf) return i;
    }
    i += length;
  }
  return -1;
}

/** What is wrong with `bytes` as UTF-8 text of `what` ("the body", "the message"), or undefined. */
export function invalidUtf8Detail(bytes: Uint8Array, what: string): string | undefined {
  const at = firstInvalidUtf8(bytes);
  if (at < 0) return undefined;
  // The byte there and the continuation bytes (80..BF) after it, as far as a character could reach.
  let end = at + 1;
  while (end < bytes.length && end < at + 4 && bytes[end] >= 0x80 && bytes[end] <= 0xbf) end++;
  const shown = Array.from(bytes.subarray(at, end), (b) => b.toString(16).toUpperCase().padStart(2, "0")).join(" ");
  return `${what} is not valid UTF-8: the bytes at offset ${at} (${shown}) are not a UTF-8 character; send JSON encoded in UTF-8`;
}

const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Where JSON text escapes half of a UTF-16 surrogate pair alone (`"\ud800"`): the offset of its
 * backslash, or -1. Such a string is no Unicode text, so no protobuf string can hold it.
 */
export function unpairedSurrogateEscape(text: string): number {
  let i = text.indexOf("\\");
  while (i >= 0) {
    const escaped = text.charCodeAt(i + 1);
    if (escaped !== 0x75 /* u */) {
      i = text.indexOf("\\", i + 2);
      continue;
    }
    const unit = Number.parseInt(text.slice(i + 2, i + 6), 16);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      // A high half must be followed by an escaped low half.
      const low = text.charCodeAt(i + 7) === 0x75 ? Number.parseInt(text.slice(i + 8, i + 12), 16) : Number.NaN;
      if (text.charCodeAt(i + 6) !== 0x5c || !(low >= 0xdc00 && low <= 0xdfff)) return i;
      i = text.indexOf("\\", i + 12);
      continue;
    }
    if (unit >= 0xdc00 && unit <= 0xdfff) return i;
    i = text.indexOf("\\", i + 6);
  }
  return -1;
}

/**
 * A TextDecoder's `decode` for JSON request messages (Connect's JSON serialization takes it as
 * `textDecoder`, and answers what it throws as invalid_argument): refuses bytes that are not UTF-8
 * with invalidUtf8Detail's message, and a string escaping half a surrogate pair, which protobuf-es
 * would otherwise quote raw in its error, where gRPC's percent-encoded grpc-message cannot carry it.
 */
export const strictUtf8Decoder = {
  decode(input?: Uint8Array): string {
    if (input === undefined) return "";
    const text = decodeUtf8Strictly(input, "the message");
    const at = unpairedSurrogateEscape(text);
    if (at >= 0) {
      throw new Error(
        `the message is not Unicode text: ${text.slice(at, at + 6)} at offset ${at} escapes half of a UTF-16 surrogate pair alone`,
      );
    }
    return text;
  },
};

/**
 * `bytes` as UTF-8 text; throws invalidUtf8Detail's message (about `what`) when they are not. The
 * decoder's own check is the only pass over a valid body; the offset is looked for on failure.
 */
export function decodeUtf8Strictly(bytes: Uint8Array, what: string): string {
  try {
    return decoder.decode(bytes);
  } catch (error) {
    throw new Error(invalidUtf8Detail(bytes, what) ?? String(error));
  }
}
