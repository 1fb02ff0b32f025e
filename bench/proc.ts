/** Child processes of the bench: spawn with IPC, wait for "listening", sample memory, stop. */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));

export interface ServerProcess {
  name: string;
  port: number;
  pid: number;
  child: ChildProcess;
  /** Last lines of stderr, for error messages. */
  stderr(): string;
  /** Graceful stop (SIGTERM), then SIGKILL after `graceMs`; resolves with the exit code. */
  stop(graceMs?: number): Promise<number | null>;
}

const running = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

export interface SpawnOptions {
  name: string;
  /** A .ts entry under the repo, run with `node [nodeArgs] --import tsx <entry>`. */
  entry: string;
  env: Record<string, string>;
  nodeArgs?: string[];
  timeoutMs?: number;
  /** The checkout the entry is relative to (default: this one; the code before issue 10 runs from its own, before.ts). */
  cwd?: string;
}

/**
 * The V8 flags the service runs with in production: the Dockerfile's CMD and `npm start` carry
 * the same (test/deploy/node-flags.test.ts checks that the three agree).
 */
export const SERVICE_NODE_FLAGS: readonly string[] = ["--max-semi-space-size=8"];

/** Where compileServers() writes the servers' JavaScript (git-ignored). */
export const SERVER_BUILD_DIR = "bench/.build";

/**
 * Compiles the service and the baseline with tsc, as the container image runs them (`node
 * dist/src/main.js`): tsx's module loader would otherwise run in a worker thread of every server,
 * adding ~55 MB of RSS and a second isolate's CPU that the deployed service does not have.
 */
export function compileServers(cwd = REPO_ROOT): Promise<string> {
  return runNode("node_modules/typescript/bin/tsc", ["-p", "bench/tsconfig.servers.json"], [], false, cwd);
}

/** A server entry: compiled JavaScript (`*.js`) runs as it is, TypeScript through tsx. */
export function spawnServer(options: SpawnOptions): Promise<ServerProcess> {
  const loader = options.entry.endsWith(".js") ? [] : ["--import", "tsx"];
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), ...loader, options.entry], {
    cwd: options.cwd ?? REPO_ROOT,
    env: { ...process.env, ...options.env },
    stdio: ["ignore", "ignore", "pipe", "ipc"],
  });
  running.add(child);
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<number | null>((resolve) =>
    child.once("exit", (code) => {
      running.delete(child);
      resolve(code);
    }),
  );
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${options.name} did not start within ${options.timeoutMs ?? 30_000} ms\n${stderr}`));
    }, options.timeoutMs ?? 30_000);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${options.name} exited with ${code} before listening\n${stderr}`));
    });
    child.on("message", (message: { type?: string; port?: number }) => {
      if (message?.type !== "listening" || typeof message.port !== "number") return;
      clearTimeout(timer);
      resolve({
        name: options.name,
        port: message.port,
        pid: child.pid as number,
        child,
        stderr: () => stderr,
        async stop(graceMs = 10_000) {
          if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
          child.kill("SIGTERM");
          const killer = setTimeout(() => child.kill("SIGKILL"), graceMs);
          const code = await exited;
          clearTimeout(killer);
          return code;
        },
      });
    });
  });
}

/**
 * Runs `node --import tsx <entry> args…` (without tsx for JavaScript) to completion in `cwd` (this
 * checkout by default); rejects on a non-zero exit.
 */
export function runNode(
  entry: string,
  args: string[],
  nodeArgs: string[] = [],
  typescript = true,
  cwd = REPO_ROOT,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs, ...(typescript ? ["--import", "tsx"] : []), entry, ...args], {
      cwd,
      stdio: ["ignore", "pipe", "pipe"],
    });
    running.add(child);
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    child.stderr.on("data", (c: Buffer) => (err = (err + c.toString()).slice(-4000)));
    child.once("exit", (code) => {
      running.delete(child);
      if (code === 0) resolve(out);
      else reject(new Error(`${entry} ${args.join(" ")} exited with ${code}\n${err}`));
    });
  });
}

/** Peak resident set (VmHWM) and current resident set (VmRSS) of a process, in MiB. */
export function memoryOf(pid: number): { peakMb: number; rssMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN);
  return { peakMb: kb("VmHWM") / 1024, rssMb: kb("VmRSS") / 1024 };
}

const CLOCK_TICKS = 100; // USER_HZ on Linux

/** CPU seconds (user + system, all threads) a process has used; "self" for this one. */
export function cpuSecondsOf(pid: number | "self"): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}

/** CPU seconds every CPU of the machine has spent busy (not idle, not iowait) since boot. */
export function machineBusySeconds(): number {
  try {
    const [, ...values] = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/);
    const [user, nice, system, , , irq, softirq, steal] = values.map(Number);
    return (user + nice + system + irq + softirq + (steal || 0)) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}

/**
 * Resolves once the process has used at most one clock tick (10 ms) in each of two consecutive
 * 100 ms intervals (a server under `--cpu-prof` idles at ~7 ms per 100 ms), or after `maxMs`.
 */
export async function waitUntilIdle(pid: number, maxMs = 15_000): Promise<number> {
  const started = Date.now();
  let quiet = 0;
  let last = cpuSecondsOf(pid);
  while (Date.now() - started < maxMs && quiet < 2) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const now = cpuSecondsOf(pid);
    quiet = now - last <= 0.015 ? quiet + 1 : 0;
    last = now;
  }
  return Date.now() - started;
}
