import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..");

interface Started {
  child: ChildProcess;
  port: number;
  output: () => string;
}

/** Starts `src/main.ts` as `npm start` does and waits for the log line naming the chosen port. */
function startMain(env: Record<string, string>): Promise<Started> {
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    cwd: root,
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let text = "";
  child.stdout?.on("data", (chunk: Buffer) => (text += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (text += chunk.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line after 20 s:\n${text}`)), 20_000);
    const check = () => {
      const match = /listening on http:\/\/[^:]+:(\d+) \(HTTP\/1\.1 and h2c\)/.exec(text);
      if (match && text.includes("demo client_secret")) {
        clearTimeout(timer);
        child.stdout?.off("data", check);
        resolve({ child, port: Number(match[1]), output: () => text });
      }
    };
    child.stdout?.on("data", check);
    child.once("exit", (code) => reject(new Error(`exited with ${code} before listening:\n${text}`)));
  });
}

function exitCode(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

describe("the service process (docs/api.md §1, §3)", () => {
  const dirs: string[] = [];
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) child.kill("SIGKILL");
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  function tempStore(): string {
    const dir = mkdtempSync(join(tmpdir(), "ledger-main-"));
    dirs.push(dir);
    return join(dir, "ledger.sqlite");
  }

  it("PORT=0 logs the chosen port, prints demo credentials that work, and SIGTERM exits 0", async () => {
    const started = await startMain({ PORT: "0", SQLITE_PATH: tempStore() });
    children.push(started.child);
    const base = `http://127.0.0.1:${started.port}`;
    expect(started.port).toBeGreaterThan(0);
    const secret = /demo client_secret:\s+(\S+)/.exec(started.output())?.[1];
    const clientId = /demo client_id:\s+(\S+)/.exec(started.output())?.[1];
    expect(secret).toBeDefined();
    expect(started.output()).not.toContain("DEVELOPMENT IDENTITY PROVIDER IS ON");

    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const tokenResponse = await fetch(`${base}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        client_id: clientId,
        client_secret: secret,
        audience: "https://source-ledger.local",
        grant_type: "client_credentials",
      }),
    });
    expect(tokenResponse.status).toBe(200);
    const { access_token: token } = (await tokenResponse.json()) as { access_token: string };
    const list = await fetch(`${base}/sources`, { headers: { authorization: `Bearer ${token}` } });
    expect(list.status).toBe(200);
    // The token never reaches the log.
    expect(started.output()).not.toContain(token);

    const exited = exitCode(started.child);
    started.child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(started.output()).toContain('"signal":"SIGTERM"');
  });

  it("with DEV_AUTH=allow, warns loudly when the development identity provider listens beyond loopback; SIGINT exits 0", async () => {
    const started = await startMain({ PORT: "0", HOST: "0.0.0.0", SQLITE_PATH: tempStore(), DEV_AUTH: "allow" });
    children.push(started.child);
    expect(started.output()).toContain("DEVELOPMENT IDENTITY PROVIDER IS ON AND THE SERVICE LISTENS BEYOND LOOPBACK");
    const exited = exitCode(started.child);
    started.child.kill("SIGINT");
    expect(await exited).toBe(0);
  });

  it.each([
    [{ HOST: "0.0.0.0" }, "HOST=0.0.0.0 listens beyond loopback"],
    [{ NODE_ENV: "production" }, "NODE_ENV=production"],
    [{ NODE_ENV: "production", HOST: "::" }, "NODE_ENV=production"],
  ])("fails closed: without AUTH_ISSUER and DEV_AUTH=allow, %j refuses to start (exit 1)", async (env, why) => {
    const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
      cwd: root,
      env: { PATH: process.env.PATH ?? "", PORT: "0", SQLITE_PATH: tempStore(), ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    expect(await exitCode(child)).toBe(1);
    expect(stderr.trim()).toBe(
      "source-ledger failed to start: configuration error: AUTH_ISSUER is unset, so the development identity " +
        `provider would run, but ${why}: set AUTH_ISSUER (and AUTH_AUDIENCE) to your identity provider, ` +
        "or DEV_AUTH=allow for a local stack",
    );
    // No client secret was printed: the provider never started.
    expect(stdout).not.toContain("client_secret");
  });

  it("refuses to start on a bad configuration with a one-line message and exit code 1", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
      cwd: root,
      env: { PATH: process.env.PATH ?? "", PORT: "not-a-port" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    expect(await exitCode(child)).toBe(1);
    expect(stderr.trim()).toBe(
      'source-ledger failed to start: configuration error: PORT must be an integer, got "not-a-port"',
    );
  });
});
