import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readIntoPageCache } from "../../bench/page-cache.js";

describe("readIntoPageCache (bench)", () => {
  const dirs: string[] = [];
  const dir = () => {
    const made = mkdtempSync(join(tmpdir(), "page-cache-"));
    dirs.push(made);
    return made;
  };
  afterEach(() => {
    for (const made of dirs.splice(0)) rmSync(made, { recursive: true, force: true });
  });

  it("reads the file and its WAL to their ends, across more than one chunk", () => {
    const path = join(dir(), "ledger.sqlite");
    writeFileSync(path, Buffer.alloc(8 * 2 ** 20 + 12_345, 1));
    writeFileSync(`${path}-wal`, Buffer.alloc(4_096, 2));
    expect(readIntoPageCache(path)).toBe(8 * 2 ** 20 + 12_345 + 4_096);
  });

  it("reads the file alone when it has no WAL, and an empty file as 0 bytes", () => {
    const base = dir();
    writeFileSync(join(base, "a.sqlite"), "sqlite");
    writeFileSync(join(base, "empty.sqlite"), "");
    expect(readIntoPageCache(join(base, "a.sqlite"))).toBe(6);
    expect(readIntoPageCache(join(base, "empty.sqlite"))).toBe(0);
  });
});
