/**
 * Issue 13 point 4 with a real client in another language: the stubs are generated from proto/
 * with the EXACT protoc command of examples/python/README.md (Debian's protoc 3.21 and
 * grpc_python_plugin), then examples/python/client.py runs against a real server whose
 * development identity provider hands it a token: Create/List/Get/Delete over grpcio, and a
 * google.rpc.BadRequest decoded from `grpc-status-details-bin` (docs/api.md §9.5). Runs when a
 * python3 that can `import grpc`, protoc (with the well-known types) and grpc_python_plugin are
 * installed; otherwise every test is skipped with the reason in the suite's name (`.ci/run`
 * installs them).
 */
import { execFile, spawnSync } from "node:child_process";
import { accessSync, constants, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/server.js";
import { PRODUCTION_ID, SANDBOX_ID } from "./grpc-support.js";

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, "..", "..");
const EXAMPLE = join(ROOT, "examples", "python");
const CLIENT = join(EXAMPLE, "client.py");
const DEV_CLIENTS = join(ROOT, "examples", "dev-clients.json");
const UNCLOSED =
  "sources[0].geometry.polygon.rings[0]: the exterior ring is not closed: its last position (0, 0.5) differs from its first (0, 0)";

/** The first executable `name` on PATH. */
function onPath(name: string): string | null {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {
      // not in this directory
    }
  }
  return null;
}

interface Tools {
  python: string;
  plugin: string;
  version: string;
}

/**
 * The tools the suite needs, or the first one missing. `python3` on PATH may be a pyenv or
 * virtualenv Python that does not see Debian's python3-grpcio, so Debian's own is tried too.
 */
function pythonClientTools(): Tools | { missing: string } {
  let python: { path: string; version: string } | null = null;
  for (const candidate of ["python3", "/usr/bin/python3"]) {
    const probe = spawnSync(
      candidate,
      [
        "-c",
        "import grpc, google.protobuf; print('grpcio', grpc.__version__, 'protobuf', google.protobuf.__version__)",
      ],
      { encoding: "utf8" },
    );
    if (!probe.error && probe.status === 0) {
      python = { path: candidate, version: probe.stdout.trim() };
      break;
    }
  }
  if (!python) return { missing: "python3-grpcio" };
  const protoc = spawnSync("protoc", ["--version"], { encoding: "utf8" });
  if (protoc.error || protoc.status !== 0) return { missing: "protoc" };
  const plugin = onPath("grpc_python_plugin");
  if (!plugin) return { missing: "grpc_python_plugin" };
  // Debian's protoc finds google/protobuf/timestamp.proto in /usr/include, from libprotobuf-dev.
  const wellKnown = spawnSync(
    "protoc",
    ["-I", "proto", "--descriptor_set_out=/dev/null", "sourceledger/v2/source_ledger.proto"],
    { cwd: ROOT, encoding: "utf8" },
  );
  if (wellKnown.status !== 0) return { missing: "libprotobuf-dev" };
  return { python: python.path, plugin, version: `${protoc.stdout.trim()}, ${python.version}` };
}

/**
 * The protoc command of examples/python/README.md (the code block that runs `protoc`), as argv,
 * writing into `out` and using the plugin found on PATH.
 */
function readmeProtocArgs(out: string, plugin: string): string[] {
  const readme = readFileSync(join(EXAMPLE, "README.md"), "utf8");
  const block = /```sh\n((?:.*\n)*?)```/g;
  for (const [, body] of readme.matchAll(block)) {
    const command = body.replace(/\\\n/g, " ");
    const line = command.split("\n").find((l) => l.startsWith("protoc "));
    if (!line) continue;
    return line
      .trim()
      .split(/\s+/)
      .slice(1)
      .map((arg) => arg.replaceAll("examples/python/gen", out).replace("=/usr/bin/grpc_python_plugin", `=${plugin}`));
  }
  throw new Error("examples/python/README.md has no protoc command");
}

const tools = pythonClientTools();
const SKIPPED = "missing" in tools ? `skipped: ${tools.missing} not installed` : null;
if (SKIPPED) console.info(`Python client tests (python-client.test.ts) ${SKIPPED}`);

describe.skipIf(SKIPPED !== null)(`the Python example client (${"missing" in tools ? SKIPPED : tools.version})`, () => {
  // Issue 13's matrix: the same client, the same outcomes, on the lean gRPC path and on Connect's.
  describe.each([
    ["the lean gRPC path", "on"],
    ["Connect's adapter", "off"],
  ] as const)("through %s", (_path, leanPath) => {
    pythonClientSuite(leanPath);
  });
});

function pythonClientSuite(leanPath: "on" | "off"): void {
  const { python, plugin } = tools as Tools;
  let server: TestServer;
  let stubs: string;

  beforeAll(async () => {
    stubs = mkdtempSync(join(tmpdir(), "ledger-python-"));
    const args = readmeProtocArgs(stubs, plugin);
    expect(args).toContain(`--grpc_out=${stubs}`);
    await run("protoc", args, { cwd: ROOT });
    server = await startTestServer({
      AUTH_ISSUER: "",
      AUTH_JWKS_URL: "",
      DEV_CLIENTS_FILE: DEV_CLIENTS,
      GRPC_LEAN_PATH: leanPath,
    });
  });

  afterAll(async () => {
    await server?.close();
    if (stubs) rmSync(stubs, { recursive: true, force: true });
  });

  async function client(...extra: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    try {
      const { stdout, stderr } = await run(
        python,
        [CLIENT, "--stubs", stubs, "--target", `127.0.0.1:${server.port}`, ...extra],
        { timeout: 60_000, env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1" } },
      );
      return { code: 0, stdout, stderr };
    } catch (error) {
      const failed = error as { code?: number; stdout?: string; stderr?: string };
      return { code: failed.code ?? -1, stdout: failed.stdout ?? "", stderr: failed.stderr ?? "" };
    }
  }

  /** A REST token of the same development client, to check the client's work independently. */
  async function restToken(): Promise<string> {
    const response = await server.request("POST", "/oauth/token", {
      json: {
        client_id: "farm-co",
        client_secret: "local-dev-only-farm-co",
        audience: "https://source-ledger.local",
        grant_type: "client_credentials",
      },
    });
    expect(response.status).toBe(200);
    return ((await response.json()) as { access_token: string }).access_token;
  }

  it.each([
    ["SourceLedgerService", [], PRODUCTION_ID, "/sources"],
    ["SandboxSourceLedgerService", ["--sandbox"], SANDBOX_ID, "/sandbox/sources"],
  ] as const)(
    "%s: token, create, list, get, delete, then a decoded google.rpc.BadRequest",
    async (service, extra, idPattern, rest) => {
      const outcome = await client(...extra);
      const shown = `exit ${outcome.code}\n${outcome.stdout}\n${outcome.stderr}`;
      expect(outcome.code, shown).toBe(0);
      expect(outcome.stderr, shown).toBe("");
      const lines = outcome.stdout.trim().split("\n");

      expect(lines[0]).toBe(`token: from http://127.0.0.1:${server.port}/oauth/token for client farm-co`);
      expect(lines[1]).toBe(`service: sourceledger.v2.${service}`);
      const created = lines.filter((l) => l.startsWith("created: ")).map((l) => l.split(" "));
      expect(created).toHaveLength(2);
      const ids = created.map((c) => c[1]);
      for (const id of ids) expect(id).toMatch(idPattern);
      const [north, mill] = created.map((c) => c[2].replace("alt_id=", ""));
      expect(north).toMatch(/^py-[0-9a-f]{10}-north$/);
      expect(mill).toBe(north.replace(/-north$/, "-mill"));
      const project = north.replace(/-north$/, "");

      expect(lines).toContain(`listed: 2 sources with project_id=${project}: ${[...ids].sort().join(" ")}`);
      expect(lines).toContain(`fetched: ${ids[0]} alt_id=${north} source_type=SOURCE_TYPE_FIELD rings=1`);
      expect(lines).toContain(`fetched: ${ids[1]} alt_id=${mill} source_type=SOURCE_TYPE_FACILITY rings=1`);
      expect(lines).toContain(`deleted: ${ids[0]} by id`);
      expect(lines).toContain(`deleted: ${ids[1]} by alt_id=${mill}`);
      expect(lines).toContain(`gone: ${ids[0]} NOT_FOUND`);
      expect(lines).toContain(`gone: ${ids[1]} NOT_FOUND`);

      expect(lines).toContain(`invalid create: INVALID_ARGUMENT: ${UNCLOSED}`);
      expect(lines).toContain("details: type.googleapis.com/google.rpc.BadRequest");
      expect(lines.filter((l) => l.startsWith("violation: "))).toEqual([`violation: ${UNCLOSED}`]);
      expect(lines.at(-1)).toBe("OK: create, list, get, delete and a decoded google.rpc.BadRequest");

      // Over REST, with the same development client: both sources are gone, nothing of the run is left.
      const token = await restToken();
      for (const id of ids) {
        const response = await server.request("GET", `${rest}/${id}`, { token });
        expect(response.status, await response.text()).toBe(404);
      }
      const listed = await server.request("GET", `${rest}?project_id=${project}`, { token });
      expect(listed.status).toBe(200);
      expect(await listed.json()).toEqual([]);
    },
  );

  it("exits 1 saying FAIL when an answer is not the expected one (a wrong client secret)", async () => {
    const outcome = await client("--client-secret", "wrong");
    expect(outcome.code).toBe(1);
    expect(outcome.stdout).toBe("");
    expect(outcome.stderr).toMatch(
      /^FAIL: POST http:\/\/127\.0\.0\.1:\d+\/oauth\/token answered 401: .*invalid_client/,
    );
  });
}
