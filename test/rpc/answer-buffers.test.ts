/**
 * The lean gRPC path's answer buffers (rpc/answer-buffers.ts): exact sizes, a buffer handed out
 * again only after it came back, each one taken back once and only if it was lent, and free lists
 * bounded by their byte budget.
 */
import { describe, expect, it } from "vitest";
import { AnswerBuffers } from "../../src/rpc/answer-buffers.js";

describe("AnswerBuffers", () => {
  it("hands out exactly the size asked for, in a power-of-two buffer of at least 1 KiB", () => {
    const buffers = new AnswerBuffers(1 << 20);
    const small = buffers.acquire(7);
    expect(small.byteLength).toBe(7);
    expect(small.buffer.byteLength).toBe(1024);
    const page = buffers.acquire(300_000);
    expect(page.byteLength).toBe(300_000);
    expect(page.buffer.byteLength).toBe(512 * 1024);
    expect(buffers.acquire(1 << 23).buffer.byteLength).toBe(1 << 23);
  });

  it("hands a buffer out again once it came back, not before", () => {
    const buffers = new AnswerBuffers(1 << 20);
    const first = buffers.acquire(3_000);
    const second = buffers.acquire(3_000);
    expect(second.buffer).not.toBe(first.buffer);
    buffers.release(first);
    expect(buffers.freeBytes).toBe(4096);
    const third = buffers.acquire(2_500);
    expect(third.buffer).toBe(first.buffer);
    expect(third.byteLength).toBe(2_500);
    expect(buffers.freeBytes).toBe(0);
  });

  it("takes each buffer back once: a second release does not let two answers share it", () => {
    const buffers = new AnswerBuffers(1 << 20);
    const lent = buffers.acquire(100);
    buffers.release(lent);
    buffers.release(lent);
    expect(buffers.freeBytes).toBe(1024);
    const a = buffers.acquire(100);
    const b = buffers.acquire(100);
    expect(a.buffer).toBe(lent.buffer);
    expect(b.buffer).not.toBe(a.buffer);
  });

  it("ignores buffers it did not lend", () => {
    const buffers = new AnswerBuffers(1 << 20);
    buffers.release(new Uint8Array(1024));
    buffers.release(Buffer.alloc(5));
    expect(buffers.freeBytes).toBe(0);
  });

  it("keeps no more free bytes than its budget, and never keeps an answer larger than 8 MiB", () => {
    const buffers = new AnswerBuffers(3 * 1024);
    const lent = [buffers.acquire(1000), buffers.acquire(1000), buffers.acquire(1000), buffers.acquire(1000)];
    for (const buffer of lent) buffers.release(buffer);
    expect(buffers.freeBytes).toBe(3 * 1024);
    const huge = new AnswerBuffers(1 << 30);
    const answer = huge.acquire((1 << 23) + 1);
    expect(answer.byteLength).toBe((1 << 23) + 1);
    huge.release(answer);
    expect(huge.freeBytes).toBe(0);
  });
});
