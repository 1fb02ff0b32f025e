import { describe, expect, it } from "vitest";
import { pointerToken, queryPointer } from "../../src/http/json-pointer.js";

describe("JSON pointers of names (RFC 6901)", () => {
  it.each([
    ["limit", "limit"],
    ["a/b", "a~1b"],
    ["c~d", "c~0d"],
    // ~ first: "~1" as text must not come back as "/".
    ["~1", "~01"],
    ["/~/", "~1~0~1"],
    ["", ""],
  ])("%j is the token %j", (name, token) => {
    expect(pointerToken(name)).toBe(token);
    expect(queryPointer(name)).toBe(`/query/${token}`);
  });
});
