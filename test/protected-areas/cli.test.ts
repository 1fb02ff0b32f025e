import { spawnSync } from "node:child_process";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type CliContext, runCli, USAGE } from "../../src/protected-areas/cli.js";
import { featureCollection, paFeature, rect, type TempDir, tempDir } from "./fixtures.js";

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

const mixed = featureCollection([
  paFeature(1, rect(0, 0, 1, 1), { NAME: "Park One" }),
  paFeature(undefined, rect(0, 0, 1, 1)),
  paFeature(2, { type: "Point", coordinates: [0, 0] }),
  paFeature(3, rect(5, 5, 6, 6)),
]);

describe("cli", () => {
  let temp: TempDir;
  let env: NodeJS.ProcessEnv;

  beforeEach(() => {
    temp = tempDir("pa-cli-");
    env = { SQLITE_PATH: temp.path("data/ledger.sqlite") };
  });

  afterEach(() => temp.remove());

  async function cli(argv: string[], overrides: Partial<CliContext> = {}): Promise<Run> {
    let stdout = "";
    let stderr = "";
    const code = await runCli(argv, {
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: (text: string) => (stderr += text) },
      env,
      ...overrides,
    });
    return { code, stdout, stderr };
  }

  it("--help prints the usage and exits 0; no arguments prints it and exits 1", async () => {
    expect(await cli(["--help"])).toEqual({ code: 0, stdout: USAGE, stderr: "" });
    expect(await cli(["protected-areas", "import", "-h"])).toMatchObject({ code: 0, stdout: USAGE });
    expect(await cli([])).toMatchObject({ code: 1, stdout: USAGE });
    expect(USAGE).toMatch(/protected-areas import FILE --dataset NAME/);
    expect(USAGE).toMatch(/protected-areas status/);
  });

  it.each([
    [["frobnicate"], /unknown command "frobnicate"/],
    [["protected-areas"], /needs a command: import or status/],
    [["protected-areas", "export"], /unknown protected-areas command "export"/],
    [["protected-areas", "import", "--dataset", "X"], /needs the GeoJSON file/],
    [["protected-areas", "import", "a.json"], /needs --dataset NAME/],
    [["protected-areas", "import", "a.json", "b.json", "--dataset", "X"], /takes one file, got 2/],
    [["protected-areas", "import", "a.json", "--dataset"], /--dataset/],
    [
      ["protected-areas", "import", "a.json", "--dataset", "X", "--batch-size", "0"],
      /--batch-size must be an integer of at least 1/,
    ],
    [
      ["protected-areas", "import", "a.json", "--dataset", "X", "--max-reasons", "lots"],
      /--max-reasons must be an integer/,
    ],
    [["protected-areas", "status", "now"], /takes no arguments/],
    [["--verbose"], /Unknown option '--verbose'/],
  ])("usage error %j: exit 1, one clear line, no stack trace", async (argv, message) => {
    const run = await cli(argv);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe("");
    expect(run.stderr).toMatch(message);
    expect(run.stderr).toMatch(/^error: .*\nRun "npm run cli -- --help" for usage\.\n$/);
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it("input errors exit 1 with the reason and no stack trace", async () => {
    for (const [argv, message] of [
      [
        ["protected-areas", "import", temp.path("nope.geojson"), "--dataset", "X"],
        /^error: no such file: .*nope\.geojson\n$/,
      ],
      [
        ["protected-areas", "import", temp.write("f.json", paFeature(1, rect(0, 0, 1, 1))), "--dataset", "X"],
        /^error: the file is not a GeoJSON FeatureCollection: its "type" is "Feature"\n$/,
      ],
      [
        ["protected-areas", "import", temp.write("bad.json", "{"), "--dataset", "X"],
        /^error: the file ends before its JSON is complete/,
      ],
    ] as const) {
      const run = await cli([...argv]);
      expect(run).toMatchObject({ code: 1, stdout: "" });
      expect(run.stderr).toMatch(message);
    }
    const memory = await cli(["protected-areas", "status"], { env: { SQLITE_PATH: ":memory:" } });
    expect(memory).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/^error: SQLITE_PATH=:memory: is private to one process/),
    });
    const bad = await cli(["protected-areas", "status"], { env: { ...env, LEDGER_STORE: "oracle" } });
    expect(bad).toMatchObject({ code: 1, stderr: expect.stringMatching(/^error: LEDGER_STORE must be/) });
  });

  it("status says when no layer is loaded", async () => {
    const run = await cli(["protected-areas", "status"]);
    expect(run).toEqual({
      code: 0,
      stdout:
        "No protected-area layer is loaded: unep_overlap is null on every create.\n" +
        "Load one with: npm run cli -- protected-areas import FILE --dataset NAME\n",
      stderr: "",
    });
  });

  it("import reports counts and reasons; status shows the layer", async () => {
    const file = temp.write("wdpa.geojson", mixed);
    let clock = Date.UTC(2025, 0, 20, 10, 0, 0);
    const run = await cli(["protected-areas", "import", file, "--dataset", "WDPA Jan 2025", "--max-reasons", "1"], {
      importOptions: { now: () => (clock += 250), progressEveryFeatures: 2 },
    });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(
      new RegExp(
        `^Imported protected-area layer "WDPA Jan 2025" from .*wdpa\\.geojson\\n` +
          "  features read:  4\\n  loaded:         2\\n  rejected:       2\\n" +
          "  time:           \\d+\\.\\d s \\(\\d+ features/s\\)\\n  active since:   2025-01-20T10:00:\\d\\d\\.\\d{3}Z\\n$",
      ),
    );
    expect(run.stderr).toContain("protected-areas import: 2 features read (1 loaded, 1 rejected) in ");
    expect(run.stderr).toContain("protected-areas import: 4 features read (2 loaded, 2 rejected) in ");
    expect(run.stderr).toContain("Rejected features (first 1 of 2):\n  feature 1: it has no WDPAID property\n");

    const status = await cli(["protected-areas", "status"]);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(
      new RegExp(
        "^Protected-area layer loaded:\\n  dataset:      WDPA Jan 2025\\n  features:     2\\n  rejected:     2\\n" +
          "  imported at:  2025-01-20T10:00:\\d\\d\\.\\d{3}Z\\n  source file:  .*wdpa\\.geojson\\n$",
      ),
    );
  });

  it("an import with no valid feature exits 1, lists the reasons and keeps the layer", async () => {
    await cli(["protected-areas", "import", temp.write("good.geojson", mixed), "--dataset", "Good"]);
    const run = await cli([
      "protected-areas",
      "import",
      temp.write("bad.geojson", featureCollection([3, paFeature(1, null)])),
      "--dataset",
      "Bad",
    ]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      "Rejected features (2):\n  feature 0: it is number 3, not a GeoJSON Feature object\n  feature 1 (WDPAID 1): the feature has no geometry\n",
    );
    expect(run.stderr).toContain("error: none of the 2 features could be loaded; the loaded layer is unchanged\n");
    expect((await cli(["protected-areas", "status"])).stdout).toMatch(/dataset: {6}Good\n/);
  });

  it("an interrupted import exits 130 and keeps the layer", async () => {
    const controller = new AbortController();
    controller.abort();
    const run = await cli(["protected-areas", "import", temp.write("w.geojson", mixed), "--dataset", "X"], {
      signal: controller.signal,
    });
    expect(run).toEqual({
      code: 130,
      stdout: "",
      stderr: "interrupted: the import was abandoned and the loaded layer is unchanged\n",
    });
    expect((await cli(["protected-areas", "status"])).stdout).toMatch(/^No protected-area layer is loaded/);
  });

  it("runs as `npm run cli` does: node --import tsx src/cli.ts, reading SQLITE_PATH", () => {
    const file = temp.write("wdpa.geojson", mixed);
    const spawnCli = (args: string[]) =>
      spawnSync(process.execPath, ["--import", "tsx", "src/cli.ts", ...args], {
        cwd: process.cwd(),
        env: { ...process.env, SQLITE_PATH: env.SQLITE_PATH },
        encoding: "utf8",
      });
    const imported = spawnCli(["protected-areas", "import", file, "--dataset", "Spawned"]);
    expect(imported.status).toBe(0);
    expect(imported.stdout).toMatch(/^Imported protected-area layer "Spawned"/);
    const status = spawnCli(["protected-areas", "status"]);
    expect(status.status).toBe(0);
    expect(status.stdout).toMatch(/dataset: {6}Spawned\n {2}features: {5}2\n {2}rejected: {5}2\n/);
    const missing = spawnCli(["protected-areas", "import", temp.path("missing.geojson"), "--dataset", "X"]);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/^error: no such file: /);
    expect(missing.stderr).not.toMatch(/\n\s+at /);
  });
});
