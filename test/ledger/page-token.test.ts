/**
 * Page tokens (src/ledger/page-token.ts): a cursor (and the matches still to skip after it) in,
 * the same out for the same key and binding; null for anything else: another binding, another key, any altered bit or character,
 * another spelling of the same bytes, text that is not base64url, empty or huge text.
 */
import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { PageTokens, pageTokenKey } from "../../src/ledger/page-token.js";
import type { ListCursor } from "../../src/model/list-query.js";

const SECRET = new Uint8Array(32).map((_, i) => i * 7 + 1);
const OTHER_SECRET = new Uint8Array(32).map((_, i) => i * 7 + 2);
const BINDING = JSON.stringify(["production", false, "acct-a", "acct-a", [null, "VM0042"], null]);
const T = Date.UTC(2025, 2, 4, 10, 15, 30, 123);
const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

const tokens = new PageTokens(pageTokenKey(SECRET));
const cursor: ListCursor = { createdAt: T, id: "src_01JQ8Z3YV3W6M2XK9TQ4F7B8CD" };

describe("pageTokenKey", () => {
  it("derives 32 bytes from the secret, not the secret itself, the same every time", () => {
    const key = pageTokenKey(SECRET);
    expect(key).toHaveLength(32);
    expect(key.equals(Buffer.from(SECRET))).toBe(false);
    expect(pageTokenKey(SECRET).equals(key)).toBe(true);
    expect(pageTokenKey(OTHER_SECRET).equals(key)).toBe(false);
  });

  it("lets two instances keyed by one secret (two processes of one store) read each other's tokens", () => {
    const other = new PageTokens(pageTokenKey(new Uint8Array(SECRET)));
    expect(other.read(tokens.mint(cursor, BINDING), BINDING)).toEqual({ ...cursor, skip: 0 });
  });
});

describe("PageTokens", () => {
  it("reads back the cursor it minted, for the same binding", () => {
    const token = tokens.mint(cursor, BINDING);
    expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(tokens.read(token, BINDING)).toEqual({ ...cursor, skip: 0 });
  });

  it("reads back the matches still to skip that a page ended empty within its offset minted", () => {
    for (const skip of [1, 2, 999, 2 ** 31 - 1, 2 ** 32 - 1]) {
      const token = tokens.mint(cursor, BINDING, skip);
      expect(tokens.read(token, BINDING), String(skip)).toEqual({ ...cursor, skip });
      // Four bytes longer than the same cursor's token without a skip.
      expect(Buffer.from(token, "base64url").length).toBe(
        Buffer.from(tokens.mint(cursor, BINDING), "base64url").length + 4,
      );
    }
    expect(tokens.mint(cursor, BINDING, 0)).toBe(tokens.mint(cursor, BINDING));
  });

  it("mints the same token for the same cursor and binding (no randomness, no time)", () => {
    expect(tokens.mint(cursor, BINDING)).toBe(tokens.mint({ ...cursor }, BINDING));
    expect(tokens.mint(cursor, BINDING)).not.toBe(tokens.mint({ ...cursor, createdAt: T + 1 }, BINDING));
    expect(tokens.mint(cursor, BINDING)).not.toBe(tokens.mint({ ...cursor, id: `${cursor.id}0` }, BINDING));
  });

  it.each<[string, ListCursor]>([
    ["createdAt 0", { createdAt: 0, id: "src_a" }],
    ["a negative createdAt", { createdAt: -62135596800000, id: "src_a" }],
    ["createdAt -1", { createdAt: -1, id: "src_a" }],
    ["the largest instant", { createdAt: 8.64e15, id: "src_a" }],
    ["the smallest instant", { createdAt: -8.64e15, id: "src_a" }],
    ["the largest safe integer", { createdAt: Number.MAX_SAFE_INTEGER, id: "src_a" }],
    ["a one-character id", { createdAt: T, id: "x" }],
    ["a non-ASCII id", { createdAt: T, id: "src_Ñandú_✓" }],
    ["an id outside the BMP", { createdAt: T, id: "src_😀𝄞" }],
    ["an id of control and separator characters", { createdAt: T, id: '\u0000\u0001"\\\n,[]' }],
    ["a sandbox id", { createdAt: T, id: "sandbox_0f8c2a4e-9b1d-4c3a-8e2f-5d6b7a8c9d0e" }],
    ["a 300-character id", { createdAt: T, id: "i".repeat(300) }],
  ])("round-trips %s", (_label, c) => {
    expect(tokens.read(tokens.mint(c, BINDING), BINDING)).toEqual({ ...c, skip: 0 });
    expect(tokens.read(tokens.mint(c, BINDING, 7), BINDING)).toEqual({ ...c, skip: 7 });
  });

  it("refuses the token under any other binding", () => {
    const token = tokens.mint(cursor, BINDING);
    for (const other of [
      "",
      `${BINDING} `,
      BINDING.replace("production", "sandbox"),
      BINDING.replace("false", "true"),
      BINDING.replace('"acct-a","acct-a"', '"acct-a","acct-b"'),
      BINDING.replace("VM0042", "VM0043"),
      BINDING.slice(0, -1),
      `${BINDING}\u0000`,
    ]) {
      expect(tokens.read(token, other), other).toBeNull();
    }
  });

  it("refuses a token minted with another key", () => {
    const other = new PageTokens(pageTokenKey(OTHER_SECRET));
    expect(tokens.read(other.mint(cursor, BINDING), BINDING)).toBeNull();
    expect(other.read(tokens.mint(cursor, BINDING), BINDING)).toBeNull();
  });

  it("refuses the token with any single bit of its bytes changed", () => {
    for (const [c, skip] of [
      [cursor, 0],
      [{ createdAt: 0, id: "x" }, 0],
      [{ createdAt: -8.64e15, id: "ñ" }, 0],
      [cursor, 5],
      [{ createdAt: 0, id: "x" }, 1],
    ] as const) {
      const bytes = Buffer.from(tokens.mint(c, BINDING, skip), "base64url");
      let tried = 0;
      for (let i = 0; i < bytes.length; i++) {
        for (let bit = 0; bit < 8; bit++) {
          const altered = Buffer.from(bytes);
          altered[i] ^= 1 << bit;
          expect(tokens.read(altered.toString("base64url"), BINDING), `byte ${i} bit ${bit}`).toBeNull();
          tried += 1;
        }
      }
      expect(tried).toBe(bytes.length * 8);
    }
  });

  it("refuses the token with any single character replaced, including the last one's unused bits", () => {
    const token = tokens.mint(cursor, BINDING);
    for (let i = 0; i < token.length; i++) {
      for (const character of ALPHABET) {
        if (character === token[i]) continue;
        const altered = token.slice(0, i) + character + token.slice(i + 1);
        expect(tokens.read(altered, BINDING), `${i}: ${character}`).toBeNull();
      }
    }
  });

  it("refuses the token cut short, lengthened or with its bytes dropped or added", () => {
    const token = tokens.mint(cursor, BINDING);
    const bytes = Buffer.from(token, "base64url");
    for (let n = 0; n < token.length; n++) expect(tokens.read(token.slice(0, n), BINDING)).toBeNull();
    for (const extra of ["A", "AA", "AAA", "AAAA", token]) expect(tokens.read(token + extra, BINDING)).toBeNull();
    expect(tokens.read(bytes.subarray(1).toString("base64url"), BINDING)).toBeNull();
    expect(tokens.read(bytes.subarray(0, -1).toString("base64url"), BINDING)).toBeNull();
    expect(tokens.read(Buffer.concat([bytes, Buffer.of(0)]).toString("base64url"), BINDING)).toBeNull();
    expect(tokens.read(Buffer.concat([Buffer.of(0), bytes]).toString("base64url"), BINDING)).toBeNull();
  });

  it("refuses other spellings of the same bytes: base64 with + / or padding, white space", () => {
    // A cursor whose token has both characters base64 and base64url spell differently.
    let token = "";
    for (let n = 0; !/[-_]/.test(token) || token.length % 4 === 0; n++) {
      token = tokens.mint({ createdAt: T + n, id: `src_${n}` }, BINDING);
    }
    expect(tokens.read(token, BINDING)).not.toBeNull();
    const base64 = Buffer.from(token, "base64url").toString("base64");
    expect(base64).toMatch(/[+/=]/);
    expect(tokens.read(base64, BINDING)).toBeNull();
    expect(tokens.read(base64.replace(/=+$/, ""), BINDING)).toBeNull();
    expect(tokens.read(`${token}=`, BINDING)).toBeNull();
    expect(tokens.read(`${token}==`, BINDING)).toBeNull();
    for (const spaced of [` ${token}`, `${token} `, `${token}\n`, `${token.slice(0, 4)} ${token.slice(4)}`]) {
      expect(tokens.read(spaced, BINDING)).toBeNull();
    }
  });

  it("refuses text that is not a token: empty, not base64url, too short, huge", () => {
    for (const text of [
      "",
      "=",
      "!!!!",
      "ñññ",
      "A",
      "AAAA",
      "A".repeat(34),
      "A".repeat(40),
      "A".repeat(512),
      "A".repeat(513),
      "A".repeat(1_000_000),
      "%41%41",
      "null",
      "undefined",
    ]) {
      expect(tokens.read(text, BINDING), text.slice(0, 20)).toBeNull();
    }
  });

  it("refuses a token of an unknown version, or a version its bytes do not fit, even with a valid MAC", () => {
    // The MAC covers the version byte, so such a token cannot be forged; read also checks it.
    const key = pageTokenKey(SECRET);
    const withMac = (body: Buffer) =>
      Buffer.concat([
        body,
        createHmac("sha256", key).update(BINDING).update("\u0000").update(body).digest().subarray(0, 16),
      ]).toString("base64url");
    const body = Buffer.from(tokens.mint(cursor, BINDING), "base64url").subarray(0, -16);
    expect(tokens.read(withMac(body), BINDING)).toEqual({ ...cursor, skip: 0 });
    for (const version of [0, 3, 255]) {
      const other = Buffer.from(body);
      other[0] = version;
      expect(tokens.read(withMac(other), BINDING), String(version)).toBeNull();
    }
    // Version 2 with no room for an id after its skip: nine bytes of header and three of skip.
    const short = Buffer.alloc(1 + 8 + 3);
    short[0] = 2;
    expect(tokens.read(withMac(short), BINDING)).toBeNull();
  });

  it("refuses a token too long to be one of ours, however it was made", () => {
    // Ids are a few dozen characters; a token past 512 characters is refused unread.
    const long = tokens.mint({ createdAt: T, id: "i".repeat(400) }, BINDING);
    expect(long.length).toBeGreaterThan(512);
    expect(tokens.read(long, BINDING)).toBeNull();
  });
});
