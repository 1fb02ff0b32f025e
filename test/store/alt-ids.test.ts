import { describe, expect, it } from "vitest";
import { AltIdTakenError, altIdClash, altIdsByAccount } from "../../src/store/port.js";
import { makeRecord } from "../contract/fixtures.js";

describe("a batch's alt_ids", () => {
  const batch = [
    makeRecord({ accountId: "a", altId: "x" }),
    makeRecord({ accountId: "b", altId: "x" }),
    makeRecord({ accountId: "a", altId: "y" }),
    makeRecord({ accountId: "a", altId: "x" }),
    makeRecord({ accountId: "a", altId: "z" }),
  ];

  it("are grouped per account in request order, each once, with those given twice", () => {
    const byAccount = altIdsByAccount(batch);
    expect([...byAccount.keys()]).toEqual(["a", "b"]);
    expect(byAccount.get("a")).toEqual({ altIds: ["x", "y", "z"], repeated: new Set(["x"]) });
    expect(byAccount.get("b")).toEqual({ altIds: ["x"], repeated: new Set() });
  });

  it("clash when stored or repeated, named in request order; not otherwise", () => {
    const byAccount = altIdsByAccount(batch);
    const clash = altIdClash("a", byAccount.get("a")!, ["z"]);
    expect(clash).toBeInstanceOf(AltIdTakenError);
    expect(clash?.accountId).toBe("a");
    expect(clash?.altIds).toEqual(["x", "z"]);
    expect(altIdClash("b", byAccount.get("b")!, [])).toBeNull();
    expect(altIdClash("b", byAccount.get("b")!, ["x"])?.altIds).toEqual(["x"]);
  });
});
