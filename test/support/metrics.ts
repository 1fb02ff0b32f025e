/** Reading the service's /metrics (Prometheus' text format) in tests. */
import { expect } from "vitest";
import type { TestServer } from "./server.js";

/** The samples of `name` in Prometheus' text format, each with its labels. */
export function samples(text: string, name: string): { labels: Record<string, string>; value: number }[] {
  const found: { labels: Record<string, string>; value: number }[] = [];
  for (const line of text.split("\n")) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (match === null || match[1] !== name) continue;
    const labels = Object.fromEntries(
      [...(match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]),
    );
    found.push({ labels, value: Number(match[3]) });
  }
  return found;
}

/** The value of the sample of `name` whose labels include `labels`; 0 when there is none. */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number {
  const sample = samples(text, name).find((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return sample?.value ?? 0;
}

/** The server's /metrics text. */
export async function scrape(server: TestServer): Promise<string> {
  const res = await server.request("GET", "/metrics");
  expect(res.status).toBe(200);
  return res.text();
}
