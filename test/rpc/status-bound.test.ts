import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { preview, shortened } from "../../src/ledger/preview.js";
import { boundedError, boundedStatus, MAX_STATUS_MESSAGE } from "../../src/rpc/status-bound.js";

const EMOJI = "😀"; // two UTF-16 units

describe("bounded messages are Unicode (encodeURIComponent threw on half a surrogate pair)", () => {
  it("a preview never cuts a surrogate pair in two, and shows a client's lone surrogate as U+FFFD", () => {
    const cut = shortened(`${"a".repeat(79)}${EMOJI}tail`);
    expect(cut).toBe(`${"a".repeat(79)}…`);
    expect(() => encodeURIComponent(cut)).not.toThrow();
    expect(shortened("x\ud800y")).toBe("x\uFFFDy");
    expect(preview(`${"a".repeat(79)}${EMOJI}`.repeat(2))).toBe(JSON.stringify(`${"a".repeat(79)}…`));
  });

  it("an RPC status over 1,000 units is cut whole-character on both paths; a lone surrogate is replaced", () => {
    const long = `${"m".repeat(MAX_STATUS_MESSAGE - 1)}${EMOJI}${"m".repeat(10)}`;
    const status = boundedStatus({ code: Code.InvalidArgument, message: long });
    expect(status).toEqual({ code: Code.InvalidArgument, message: `${"m".repeat(MAX_STATUS_MESSAGE - 1)}…` });
    const error = boundedError(new ConnectError(long, Code.InvalidArgument));
    expect(error.rawMessage).toBe(status?.message);
    expect(error.code).toBe(Code.InvalidArgument);
    expect(boundedStatus({ code: Code.NotFound, message: "unknown \ud83d" })).toEqual({
      code: Code.NotFound,
      message: "unknown \uFFFD",
    });
    expect(boundedStatus({ code: Code.NotFound, message: `fine ${EMOJI}` })).toBeUndefined();
    const same = new ConnectError("short", Code.NotFound);
    expect(boundedError(same)).toBe(same);
  });
});
