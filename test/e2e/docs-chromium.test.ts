/**
 * GET /docs in a real browser (issue 12, "Real clients"): headless Chromium opens the page from the
 * real server, and the page shows every path and operation of /openapi.json, with no console error,
 * no uncaught exception and no Content-Security-Policy violation, loading nothing but the server's
 * own files. The browser is driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`:
 * JSON messages ending in NUL on file descriptors 3 and 4), so no WebSocket and no npm package.
 *
 * Runs when `chromium` or `chromium-browser` is on PATH (Debian: `apt-get install chromium`);
 * otherwise reports as skipped, with the reason in its name.
 *
 * The screenshot in docs/ is this page as this test sees it, taken with:
 *   DOCS_SCREENSHOT=docs/api-docs.png npx vitest run test/e2e/docs-chromium.test.ts
 */
import { type ChildProcess, spawn } from "node:child_process";
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import type { Readable, Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { OpenApiDocument } from "../../src/http/openapi/document.js";
import { startTestServer, type TestServer } from "../support/server.js";

const METHODS = ["get", "post", "delete", "put", "patch"] as const;
/** The window the page is drawn in (and the screenshot's size). */
const WIDTH = 1280;
const HEIGHT = 2000;
/** How long the page may take to draw every operation. */
const RENDER_TIMEOUT_MS = 20_000;
/** Quiet time (no request in flight) after the last operation is drawn, for late errors to show. */
const SETTLE_MS = 500;

/** The first `chromium` or `chromium-browser` executable on PATH. */
function findChromium(): string | undefined {
  for (const name of ["chromium", "chromium-browser"]) {
    for (const dir of (process.env.PATH ?? "").split(delimiter)) {
      if (dir === "") continue;
      try {
        accessSync(join(dir, name), constants.X_OK);
        return join(dir, name);
      } catch {
        // not here
      }
    }
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// A DevTools protocol client over --remote-debugging-pipe

interface CdpEvent {
  method: string;
  params: Record<string, unknown>;
  sessionId?: string;
}

interface CdpMessage extends Partial<CdpEvent> {
  id?: number;
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
}

class Chromium {
  readonly events: CdpEvent[] = [];
  private readonly pending = new Map<
    number,
    { resolve: (r: Record<string, unknown>) => void; reject: (e: Error) => void }
  >();
  private readonly listeners = new Set<(event: CdpEvent) => void>();
  private nextId = 1;
  private stderr = "";
  private exited = false;

  private constructor(
    private readonly child: ChildProcess,
    private readonly profile: string,
  ) {
    const toBrowser = child.stdio[3] as Writable;
    const fromBrowser = child.stdio[4] as Readable;
    let buffered = "";
    fromBrowser.setEncoding("utf8");
    fromBrowser.on("data", (chunk: string) => {
      buffered += chunk;
      for (let end = buffered.indexOf("\0"); end >= 0; end = buffered.indexOf("\0")) {
        this.receive(JSON.parse(buffered.slice(0, end)) as CdpMessage);
        buffered = buffered.slice(end + 1);
      }
    });
    toBrowser.on("error", () => {}); // a write after exit; the exit handler rejects what waits
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      this.stderr = (this.stderr + chunk).slice(-4_000);
    });
    child.on("exit", (code, signal) => {
      this.exited = true;
      const error = new Error(`chromium exited (${code ?? signal}); its stderr ends:\n${this.stderr}`);
      for (const { reject } of this.pending.values()) reject(error);
      this.pending.clear();
    });
  }

  static launch(binary: string): Chromium {
    const profile = mkdtempSync(join(tmpdir(), "ledger-chromium-"));
    const args = [
      "--headless=new",
      "--disable-gpu",
      `--user-data-dir=${profile}`,
      "--remote-debugging-pipe",
      "--no-first-run",
      "--no-default-browser-check",
      "--disable-extensions",
      "--disable-background-networking",
      "--disable-component-update",
      `--window-size=${WIDTH},${HEIGHT}`,
      "about:blank",
    ];
    // Chromium's sandbox refuses to run as root (CI containers); as any other user it stays on.
    if (process.getuid?.() === 0) args.unshift("--no-sandbox");
    const child = spawn(binary, args, { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] });
    return new Chromium(child, profile);
  }

  /** Sends a command (to the browser, or to a page's session) and waits for its result. */
  send(method: string, params: Record<string, unknown> = {}, sessionId?: string): Promise<Record<string, unknown>> {
    if (this.exited) return Promise.reject(new Error(`chromium has exited; its stderr ends:\n${this.stderr}`));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`chromium did not answer ${method} within 15 s`));
      }, 15_000);
      this.pending.set(id, {
        resolve: (result) => {
          clearTimeout(timer);
          resolve(result);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      });
      (this.child.stdio[3] as Writable).write(`${JSON.stringify({ id, method, params, sessionId })}\0`);
    });
  }

  /** Resolves with the first event (recorded from now on) that `test` accepts. */
  waitFor(test: (event: CdpEvent) => boolean, timeoutMs: number, what: string): Promise<CdpEvent> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.listeners.delete(listener);
        reject(new Error(`no ${what} within ${timeoutMs} ms`));
      }, timeoutMs);
      const listener = (event: CdpEvent) => {
        if (!test(event)) return;
        clearTimeout(timer);
        this.listeners.delete(listener);
        resolve(event);
      };
      this.listeners.add(listener);
    });
  }

  /** Closes the browser (killing it if it does not go) and removes its profile. */
  async close(): Promise<void> {
    if (!this.exited) {
      const exited = new Promise<void>((resolve) => this.child.once("exit", () => resolve()));
      await Promise.race([this.send("Browser.close").catch(() => {}), delay(3_000)]);
      const gone = await Promise.race([exited.then(() => true), delay(3_000).then(() => false)]);
      if (!gone) {
        this.child.kill("SIGKILL");
        await exited;
      }
    }
    rmSync(this.profile, { recursive: true, force: true });
  }

  private receive(message: CdpMessage) {
    if (message.id !== undefined) {
      const waiter = this.pending.get(message.id);
      this.pending.delete(message.id);
      if (message.error) waiter?.reject(new Error(`chromium: ${message.error.message}`));
      else waiter?.resolve(message.result ?? {});
      return;
    }
    if (message.method === undefined) return;
    const event: CdpEvent = { method: message.method, params: message.params ?? {}, sessionId: message.sessionId };
    this.events.push(event);
    for (const listener of [...this.listeners]) listener(event);
  }
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------
// One visit of /docs, then what it showed

/** What the page drew: one entry per operation block, and Swagger UI's own error pane, if any. */
interface Drawn {
  operations: { method: string; path: string }[];
  errors: string[];
}

const DRAWN = `(() => ({
  operations: [...document.querySelectorAll("#swagger-ui .opblock")].map((block) => ({
    method: (block.querySelector(".opblock-summary-method")?.textContent ?? "").trim().toLowerCase(),
    path: block.querySelector(".opblock-summary [data-path]")?.getAttribute("data-path") ?? "",
  })),
  errors: [...document.querySelectorAll("#swagger-ui .errors-wrapper")].map((pane) => pane.textContent ?? ""),
}))()`;

interface Visit {
  drawn: Drawn;
  /** Console messages, log entries, uncaught exceptions and inspector issues, as `level: text`. */
  messages: string[];
  /** Every request the page made: URL, and the status or the failure it ended with. */
  requests: { url: string; outcome: string }[];
  screenshot?: Buffer;
}

/** `GET /sources`, …: every operation of the document. */
function documentedOperations(document: OpenApiDocument): string[] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    METHODS.filter((method) => (item as Record<string, unknown>)[method] !== undefined).map(
      (method) => `${method.toUpperCase()} ${path}`,
    ),
  );
}

const chromium = findChromium();
const SKIPPED = "skipped: chromium not installed";

describe.skipIf(!chromium)(`GET /docs in headless Chromium (${chromium ? `runs: ${chromium}` : SKIPPED})`, () => {
  let server: TestServer;
  let doc: OpenApiDocument;
  let visit: Visit;

  beforeAll(async () => {
    server = await startTestServer();
    doc = (await (await fetch(`${server.baseUrl}/openapi.json`)).json()) as OpenApiDocument;
    const browser = Chromium.launch(chromium as string);
    try {
      visit = await visitDocs(browser, `${server.baseUrl}/docs`, documentedOperations(doc).length);
    } finally {
      await browser.close();
    }
    const target = process.env.DOCS_SCREENSHOT;
    if (target && visit.screenshot) writeFileSync(target, visit.screenshot);
  }, 60_000);

  afterAll(async () => {
    await server?.close();
  });

  it("logs no console error, throws no exception and violates no Content-Security-Policy", () => {
    // Every message at any level is listed: the page is expected to say nothing at all.
    expect(visit.messages).toEqual([]);
  });

  it("shows every path and every operation of /openapi.json, and no Swagger UI error", () => {
    const documented = documentedOperations(doc);
    const shown = visit.drawn.operations.map(({ method, path }) => `${method.toUpperCase()} ${path}`);
    expect(documented.length).toBeGreaterThan(20);
    expect([...shown].sort()).toEqual([...documented].sort());
    expect(new Set(visit.drawn.operations.map(({ path }) => path))).toEqual(new Set(Object.keys(doc.paths)));
    expect(visit.drawn.errors).toEqual([]);
  });

  it("loads only the server's own files, each successfully", () => {
    const origin = `${server.baseUrl}/`;
    expect(visit.requests.map(({ url }) => url)).toContain(`${server.baseUrl}/openapi.json`);
    // swagger-ui.css draws a few icons as data: SVGs (the page's CSP allows img-src data:): no fetch.
    const fetched = visit.requests.filter(({ url }) => !url.startsWith("data:"));
    expect(fetched.filter(({ url }) => !url.startsWith(origin))).toEqual([]);
    expect(fetched.filter(({ outcome }) => outcome !== "200")).toEqual([]);
  });
});

/**
 * Opens `url` in a new page and waits until it has drawn `expected` operation blocks and then no
 * request has been in flight for SETTLE_MS; returns what it drew, said and fetched.
 */
async function visitDocs(browser: Chromium, url: string, expected: number): Promise<Visit> {
  const { targetId } = (await browser.send("Target.createTarget", { url: "about:blank" })) as { targetId: string };
  const { sessionId } = (await browser.send("Target.attachToTarget", { targetId, flatten: true })) as {
    sessionId: string;
  };
  const page = (method: string, params: Record<string, unknown> = {}) => browser.send(method, params, sessionId);
  for (const domain of ["Runtime", "Log", "Network", "Page", "Audits"]) await page(`${domain}.enable`);
  await page("Emulation.setDeviceMetricsOverride", {
    width: WIDTH,
    height: HEIGHT,
    deviceScaleFactor: 1,
    mobile: false,
  });

  const from = browser.events.length;
  const loaded = browser.waitFor(
    (event) => event.sessionId === sessionId && event.method === "Page.loadEventFired",
    RENDER_TIMEOUT_MS,
    "load event",
  );
  const navigation = (await page("Page.navigate", { url })) as { errorText?: string };
  if (navigation.errorText) throw new Error(`navigating to ${url}: ${navigation.errorText}`);
  await loaded;

  const evaluate = async <T>(expression: string): Promise<T> => {
    const answer = (await page("Runtime.evaluate", { expression, returnByValue: true })) as {
      result: { value: T };
      exceptionDetails?: unknown;
    };
    if (answer.exceptionDetails) throw new Error(`evaluating in the page: ${JSON.stringify(answer.exceptionDetails)}`);
    return answer.result.value;
  };
  const inFlight = () => {
    const open = new Set<string>();
    for (const { method, params, sessionId: session } of browser.events.slice(from)) {
      if (session !== sessionId) continue;
      const id = params.requestId as string;
      if (method === "Network.requestWillBeSent") open.add(id);
      else if (method === "Network.loadingFinished" || method === "Network.loadingFailed") open.delete(id);
    }
    return open.size;
  };

  const deadline = Date.now() + RENDER_TIMEOUT_MS;
  let drawn = await evaluate<Drawn>(DRAWN);
  let quietSince = Date.now();
  while (Date.now() < deadline) {
    if (inFlight() > 0) quietSince = Date.now();
    else if (drawn.operations.length >= expected && Date.now() - quietSince >= SETTLE_MS) break;
    await delay(50);
    drawn = await evaluate<Drawn>(DRAWN);
  }

  const screenshot = process.env.DOCS_SCREENSHOT
    ? Buffer.from(((await page("Page.captureScreenshot", { format: "png" })) as { data: string }).data, "base64")
    : undefined;

  const messages: string[] = [];
  const requests = new Map<string, { url: string; outcome: string }>();
  for (const { method, params, sessionId: session } of browser.events.slice(from)) {
    if (session !== sessionId) continue;
    switch (method) {
      case "Runtime.consoleAPICalled": {
        const args = params.args as { value?: unknown; description?: string }[];
        messages.push(`console.${params.type}: ${args.map((arg) => arg.description ?? String(arg.value)).join(" ")}`);
        break;
      }
      case "Runtime.exceptionThrown": {
        const details = params.exceptionDetails as { text: string; exception?: { description?: string } };
        messages.push(`uncaught: ${details.exception?.description ?? details.text}`);
        break;
      }
      case "Log.entryAdded": {
        const entry = params.entry as { source: string; level: string; text: string; url?: string };
        messages.push(`${entry.source} ${entry.level}: ${entry.text}${entry.url ? ` (${entry.url})` : ""}`);
        break;
      }
      case "Audits.issueAdded": {
        // Content-Security-Policy violations among them; the details say which directive and where.
        const issue = params.issue as { code: string; details: unknown };
        messages.push(`issue ${issue.code}: ${JSON.stringify(issue.details)}`);
        break;
      }
      case "Network.requestWillBeSent": {
        const request = params.request as { url: string };
        requests.set(params.requestId as string, { url: request.url, outcome: "no answer" });
        break;
      }
      case "Network.responseReceived": {
        const entry = requests.get(params.requestId as string);
        if (entry) entry.outcome = String((params.response as { status: number }).status);
        break;
      }
      case "Network.loadingFailed": {
        const entry = requests.get(params.requestId as string);
        if (entry)
          entry.outcome = `failed: ${params.errorText || "blocked"}${params.blockedReason ? ` (${params.blockedReason})` : ""}`;
        break;
      }
    }
  }
  return { drawn, messages, requests: [...requests.values()], screenshot };
}
