import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..", "..");
const buf = join(root, "node_modules", ".bin", "buf");

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

describe("proto and generated code", () => {
  const out = mkdtempSync(join(tmpdir(), "ledger-gen-"));
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  it("gen/ is exactly what `buf generate` writes from proto/", () => {
    execFileSync(buf, ["generate", "--output", out], { cwd: root, stdio: "pipe" });
    const fresh = filesUnder(join(out, "gen"))
      .map((f) => relative(join(out, "gen"), f))
      .sort();
    const committed = filesUnder(join(root, "gen"))
      .map((f) => relative(join(root, "gen"), f))
      .sort();
    expect(committed).toEqual(fresh);
    for (const file of fresh) {
      expect(readFileSync(join(root, "gen", file), "utf8"), `gen/${file} is stale: run npm run generate`).toBe(
        readFileSync(join(out, "gen", file), "utf8"),
      );
    }
  });

  it("buf lint passes", () => {
    expect(() => execFileSync(buf, ["lint"], { cwd: root, stdio: "pipe" })).not.toThrow();
  });
});
