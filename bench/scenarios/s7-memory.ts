/** S7: peak RSS (VmHWM) of every server process, read once the interleaved runs are done. */
import { memoryOf, type ServerProcess } from "../proc.js";
import type { Row } from "../report.js";
import { fmt } from "./log.js";
import type { Plan } from "./options.js";
import type { Measurements } from "./rows.js";

export type Memory = Record<string, { peakMb: number; rssMb: number }>;

/** Peak and current RSS of each server, by server name (call before stopping them). */
export function measure(servers: Map<string, ServerProcess>): Memory {
  const memory: Memory = {};
  for (const [name, server] of servers) memory[name] = memoryOf(server.pid);
  return memory;
}

/**
 * Which loads set a server's peak: each load that raised it, with the MB it added over all runs
 * (largest first), and what the peak was before them (start-up, ledger and preflights).
 */
function raisedBy(m: Measurements, server: string, peakMb: number): string {
  const raises = m.peakRaises(server);
  const byLoads = raises.reduce((sum, raise) => sum + raise.mb, 0);
  const loads = raises.map((raise) => `${raise.key} +${raise.mb.toFixed(0)}`).join(", ");
  return `${(peakMb - byLoads).toFixed(0)} MB before its loads${loads === "" ? "" : `; raised by ${loads}`}`;
}

export function rows(plan: Plan, memory: Memory, m: Measurements): Row[] {
  const s2to4 = ["get", "list-small", "list-large", "create-small", "create-large"];
  const peak = Math.max(...s2to4.map((n) => memory[n].peakMb));
  return [
    {
      id: "S7.max",
      scenario: "S7 peak RSS of the servers of S2–S4 (VmHWM)",
      metric: "max",
      value: peak,
      unit: "MB",
      target: { on: "value", op: "<", threshold: 300 },
      note: s2to4.map((n) => `${n} ${memory[n].peakMb.toFixed(0)}`).join(", "),
    },
    {
      id: "S7.grpc",
      scenario: "S7 peak RSS of the S5 server (gRPC and its REST list, issue 13)",
      metric: "VmHWM",
      value: memory.grpc.peakMb,
      unit: "MB",
      target: { on: "value", op: "<", threshold: 300 },
      note: raisedBy(m, "grpc", memory.grpc.peakMb),
    },
    {
      id: "S7.large",
      scenario: `S7 peak RSS, server with ${fmt(plan.listLarge)} stored`,
      metric: "VmHWM",
      value: memory["list-large"].peakMb,
      unit: "MB",
      target: { on: "value", op: "<", threshold: 300 },
    },
    {
      id: "S7.search",
      scenario: `S7 peak RSS of the S9–S11 server (${fmt(plan.listLarge)} stored; pages of 1,000, searches; not in the target)`,
      metric: "VmHWM",
      value: memory.search.peakMb,
      unit: "MB",
    },
  ];
}
