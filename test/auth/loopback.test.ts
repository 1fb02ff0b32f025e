import { describe, expect, it } from "vitest";
import { isLoopbackHost } from "../../src/auth/loopback.js";

describe("isLoopbackHost", () => {
  it.each([
    ["127.0.0.1", true],
    ["127.1.2.3", true],
    ["localhost", true],
    ["LOCALHOST", true],
    ["api.localhost", true],
    ["::1", true],
    ["[::1]", true],
    ["::ffff:127.0.0.1", true],
    ["[::ffff:7f00:1]", true],
    ["0.0.0.0", false],
    ["::", false],
    ["192.168.1.20", false],
    ["example.com", false],
    ["127.0.0.1.example.com", false],
  ])("%s → %s", (host, expected) => {
    expect(isLoopbackHost(host)).toBe(expected);
  });
});
