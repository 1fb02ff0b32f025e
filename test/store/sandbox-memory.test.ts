import { afterEach, describe, expect, it } from "vitest";
import { CapacityExceededError } from "../../src/store/port.js";
import { createSandboxStore, type SandboxSourceStore } from "../../src/store/sandbox/index.js";
import { change, makeRecord } from "../contract/fixtures.js";

describe("sandbox memory bound", () => {
  let store: SandboxSourceStore;
  afterEach(async () => store.close());

  it("refuses a batch that would pass the positions budget, storing nothing, and frees positions on delete", async () => {
    // Each fixture square has 5 positions: 4 sources = 20 positions.
    store = createSandboxStore({ ttlMs: 60_000, maxPositionsPerSession: 20 });
    const first = [makeRecord({ accountId: "a" }), makeRecord({ accountId: "a" }), makeRecord({ accountId: "a" })];
    await store.insertMany(first);
    const tooMany = [makeRecord({ accountId: "a" }), makeRecord({ accountId: "a" })];
    const error = await store.insertMany(tooMany).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CapacityExceededError);
    expect((error as CapacityExceededError).unit).toBe("positions");
    expect((error as CapacityExceededError).limit).toBe(20);
    expect(await store.list({ accountId: "a", attributeTypes: [], limit: 100, offset: 0 })).toHaveLength(3);
    // Another account has its own budget.
    await expect(store.insertMany(tooMany.map((r) => ({ ...r, accountId: "b" })))).resolves.toHaveLength(2);
    await store.deleteById(first[0].id, "a", change());
    await expect(
      store.insertMany([makeRecord({ accountId: "a" }), makeRecord({ accountId: "a" })]),
    ).resolves.toHaveLength(2);
  });
});
