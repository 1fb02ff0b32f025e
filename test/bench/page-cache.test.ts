import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { holdInPageCache, readIntoPageCache } from "../../bench/page-cache.js";

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

const python = spawnSync("python3", ["--version"]).status === 0;

describe.skipIf(!python)(`holdInPageCache (bench)${python ? "" : ": skipped: python3 not installed"}`, () => {
  it("maps every file and its WAL (skipping empty and missing ones) until released, and the helper then exits", async () => {
    const base = mkdtempSync(join(tmpdir(), "page-cache-hold-"));
    try {
      writeFileSync(join(base, "a.sqlite"), Buffer.alloc(9 * 2 ** 20 + 7, 1));
      writeFileSync(join(base, "a.sqlite-wal"), Buffer.alloc(4096, 2));
      writeFileSync(join(base, "empty.sqlite"), "");
      const paths = ["a.sqlite", "empty.sqlite", "missing.sqlite", "a.sqlite"].map((name) => join(base, name));
      const hold = await holdInPageCache(paths);
      expect(hold).toMatchObject({ mapped: true, bytes: 9 * 2 ** 20 + 7 + 4096 });
      const pid = hold.pid as number;
      expect(() => process.kill(pid, 0)).not.toThrow();
      hold.release();
      await expect.poll(() => alive(pid), { timeout: 5_000 }).toBe(false);
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });
});

describe("holdInPageCache without a working interpreter (bench)", () => {
  it("reads the files once instead and says why", async () => {
    const base = mkdtempSync(join(tmpdir(), "page-cache-fallback-"));
    try {
      writeFileSync(join(base, "a.sqlite"), Buffer.alloc(5_000, 1));
      const missing = await holdInPageCache([join(base, "a.sqlite")], join(base, "no-such-python"));
      expect(missing).toMatchObject({ mapped: false, bytes: 5_000 });
      expect(missing.reason).toMatch(/did not start/);
      // An interpreter that starts and fails (node, given a program path it cannot find, exits 1).
      const failing = await holdInPageCache([join(base, "a.sqlite")], process.execPath);
      expect(failing).toMatchObject({ mapped: false, bytes: 5_000 });
      expect(failing.reason).toMatch(/ended \(exit 1\)/);
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
