/**
 * A WDPA export is gigabytes; the import must stream it. Two checks on a generated file of 50,000
 * features (about 90 MB): in this process what the heap holds after a full collection grows by far
 * less than the file's size, and the real CLI completes the import in a process whose heap is capped
 * below the file's size, where reading the file whole and parsing it fails.
 */
import { spawnSync } from "node:child_process";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { importProtectedAreas } from "../../src/protected-areas/import.js";
import { openSqliteProtectedAreaLayers } from "../../src/store/sqlite/index.js";
import { tempDir, writeGridFile } from "./fixtures.js";

const FEATURES = 50_000;
const HEAP_CAP_MB = 64;
/** What the import may keep alive at once: a batch of features and the first rejections, not the file. */
const LIVE_GROWTH_CAP_MB = 16;
const MIB = 1024 * 1024;

// Sampling heapUsed without collecting measures garbage not yet collected as well, which depends on
// when V8 chose to collect (this test failed once at 64.4 MB that way): collect before each sample.
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;
function liveHeapBytes(): number {
  gc();
  return process.memoryUsage().heapUsed;
}
const temp = tempDir("pa-memory-");
const file = temp.path("grid.geojson");
let fileBytes = 0;

beforeAll(async () => {
  // 1,500 characters of padding per feature: a large file whose features are cheap to check.
  fileBytes = await writeGridFile(file, FEATURES, { invalidEvery: 1_000, padding: 1_500 });
}, 60_000);

afterAll(() => temp.remove());

describe("importing a large file", () => {
  it("keeps what the heap holds far below the file's size", async () => {
    expect(fileBytes).toBeGreaterThan(80 * MIB);
    const layers = openSqliteProtectedAreaLayers(temp.path("in-process.sqlite"));
    const baseline = liveHeapBytes();
    let peak = 0;
    let samples = 0;
    const sample = () => {
      samples++;
      peak = Math.max(peak, liveHeapBytes() - baseline);
    };
    try {
      const summary = await importProtectedAreas({
        file,
        dataset: "grid",
        layers,
        progressEveryFeatures: 2_500,
        onProgress: sample,
      });
      sample();
      expect(summary).toMatchObject({
        read: FEATURES,
        accepted: FEATURES - FEATURES / 1_000,
        rejected: FEATURES / 1_000,
      });
      expect((await layers.status()).active?.featureCount).toBe(FEATURES - FEATURES / 1_000);
    } finally {
      await layers.close();
    }
    expect(samples).toBeGreaterThanOrEqual(FEATURES / 2_500);
    expect(peak).toBeLessThan(LIVE_GROWTH_CAP_MB * MIB);
    expect(peak).toBeLessThan(fileBytes / 5);
  }, 30_000);

  it(`the CLI imports it with the heap capped at ${HEAP_CAP_MB} MB, where parsing the whole file runs out of memory`, () => {
    const capped = [`--max-old-space-size=${HEAP_CAP_MB}`];
    const cli = spawnSync(
      process.execPath,
      [...capped, "--import", "tsx", "src/cli.ts", "protected-areas", "import", file, "--dataset", "grid"],
      {
        cwd: process.cwd(),
        env: { ...process.env, SQLITE_PATH: temp.path("cli.sqlite") },
        encoding: "utf8",
      },
    );
    expect(cli.stderr).toMatch(
      /protected-areas import: 10,000 features read \(9,990 loaded, 10 rejected\) in [\d.]+ s, [\d,]+ features\/s\n/,
    );
    expect(cli.stderr).toMatch(
      /Rejected features \(first 20 of 50\):\n {2}feature 0 \(WDPAID 100000\): invalid geometry/,
    );
    expect(cli.stdout).toMatch(/ features read: {2}50,000\n {2}loaded: {9}49,950\n {2}rejected: {7}50\n/);
    expect(cli.status).toBe(0);

    // The control: the same cap does bite on the naive approach.
    const whole = spawnSync(
      process.execPath,
      [...capped, "-e", `JSON.parse(require("node:fs").readFileSync(${JSON.stringify(file)}, "utf8"))`],
      {
        encoding: "utf8",
      },
    );
    expect(whole.status).not.toBe(0);
  }, 30_000);
});
