import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { SERVICE_NODE_FLAGS } from "../../bench/proc.js";

const read = (file: string) => readFileSync(new URL(`../../${file}`, import.meta.url), "utf8");

/** The benchmark must measure the service as it is deployed: same V8 flags everywhere. */
describe("the service's Node flags", () => {
  it("are the same in the Dockerfile's CMD, npm start and the benchmark", () => {
    expect(SERVICE_NODE_FLAGS.length).toBeGreaterThan(0);
    const cmd = /^CMD (\[.*\])$/m.exec(read("Dockerfile"));
    expect(cmd, "the Dockerfile has an exec-form CMD").not.toBeNull();
    const argv = JSON.parse((cmd as RegExpExecArray)[1]) as string[];
    expect(argv).toEqual(["node", ...SERVICE_NODE_FLAGS, "dist/src/main.js"]);

    const start = (JSON.parse(read("package.json")) as { scripts: Record<string, string> }).scripts.start;
    expect(start).toBe(`node ${SERVICE_NODE_FLAGS.join(" ")} --import tsx src/main.ts`);
  });
});
