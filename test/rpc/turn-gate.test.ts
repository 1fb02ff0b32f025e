import { setImmediate as nextTurn } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { TurnGate } from "../../src/rpc/turn-gate.js";

/** Asks the gate for `count` calls at once; records the order and the turn each one ran in. */
function askMany(gate: TurnGate, count: number, turn: { n: number }, ran: [number, number][]): Promise<void>[] {
  return Array.from({ length: count }, async (_, call) => {
    const wait = gate.pass();
    if (wait !== undefined) await wait;
    ran.push([call, turn.n]);
  });
}

describe("TurnGate", () => {
  it("admits perTurn calls at once and the rest a group per later turn, in arrival order", async () => {
    const gate = new TurnGate(3);
    const turn = { n: 0 };
    const ran: [number, number][] = [];
    const calls = askMany(gate, 8, turn, ran);
    expect(gate.waiting).toBe(5);
    // The three admitted at once run without waiting for a turn (their await resolves in microtasks).
    await Promise.resolve();
    expect(ran).toEqual([
      [0, 0],
      [1, 0],
      [2, 0],
    ]);
    for (let i = 0; i < 3; i++) {
      turn.n++;
      await nextTurn();
    }
    await Promise.all(calls);
    expect(ran).toEqual([
      [0, 0],
      [1, 0],
      [2, 0],
      [3, 1],
      [4, 1],
      [5, 1],
      [6, 2],
      [7, 2],
    ]);
    expect(gate.waiting).toBe(0);
  });

  it("counts afresh each turn: a later turn admits perTurn again at once", async () => {
    const gate = new TurnGate(2);
    expect(gate.pass()).toBeUndefined();
    expect(gate.pass()).toBeUndefined();
    const third = gate.pass();
    expect(third).toBeInstanceOf(Promise);
    await third;
    await nextTurn();
    expect(gate.pass()).toBeUndefined();
    expect(gate.pass()).toBeUndefined();
    expect(gate.pass()).toBeInstanceOf(Promise);
  });

  it("a call arriving while others wait queues behind them", async () => {
    const gate = new TurnGate(2);
    const order: number[] = [];
    const ask = (call: number) => {
      const wait = gate.pass();
      if (wait === undefined) order.push(call);
      else void wait.then(() => order.push(call));
    };
    for (let call = 0; call < 5; call++) ask(call);
    expect(order).toEqual([0, 1]);
    await nextTurn(); // the gate's turn ran first: 2 and 3
    expect(order).toEqual([0, 1, 2, 3]);
    ask(5); // 4 still waits: 5 goes behind it
    expect(gate.waiting).toBe(2);
    await nextTurn();
    expect(order).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it("refuses a count that is not a positive integer", () => {
    for (const bad of [0, -1, 1.5, Number.NaN]) expect(() => new TurnGate(bad)).toThrow(RangeError);
  });
});
