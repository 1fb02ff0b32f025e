/**
 * A source's history (docs/api.md §14) through the real server over REST, gRPC and Connect JSON, in
 * production and the sandbox: the `created` event with the record as created, `conflict_set` on
 * both sides of a pair (in one account and across two), `conflict_cleared` on the survivor of a
 * delete, `deleted` with its actor; the history after the delete (GET is 404 then); `by` null on a
 * conflict event whose counterpart is another account's (admins see it); not found exactly like
 * GET /sources/{id}; the scope read:sources.
 */
import { describe, expect, it } from "vitest";
import {
  createdAtOf,
  ENVS,
  type Env,
  freshArea,
  outline,
  PROTOCOLS,
  type Protocol,
  unique,
  useHistoryServer,
} from "./history-support.js";

const h = useHistoryServer();

/** A user of `account` whose actor name is `name`. */
function user(account: string, name: string): Promise<string> {
  return h.server.userToken(account, { sub: unique("sub"), [h.server.issuer.claim("client_name")]: name });
}

const createdBy = (protocol: Protocol, record: Record<string, any>) =>
  protocol === "connect" ? record.createdBy : record.created_by;

describe.each(PROTOCOLS)("%s", (protocol) => {
  const api = () => h.clients[protocol];

  describe.each(ENVS)("%s", (env: Env) => {
    it("a created source has one `created` event: seq 1, by its actor, at its created_at, the record as answered", async () => {
      const account = unique("acct-created");
      const token = await user(account, `Creator of ${account}`);
      const cell = freshArea();
      const created = await api().createOne(token, env, {
        alt_id: unique("alt"),
        geometry: cell(0, 0, 10, 10),
        attribute_type: ["CARBON_REMOVAL"],
      });
      const events = await api().events(token, env, created.id);
      expect(outline(events)).toEqual(["1 created"]);
      expect(events[0].by).toBe(`Creator of ${account}`);
      expect(events[0].by).toBe(createdBy(protocol, created.native));
      expect(events[0].at).toBe(createdAtOf(protocol, created.native));
      expect(events[0].record).toEqual(created.native);
      // Reading it again changes nothing (reads write no events).
      expect(await api().events(token, env, created.id)).toEqual(events);
    });

    it("after a delete: `created` then `deleted` by the deleting actor; GET is not found, the history still answers", async () => {
      const account = unique("acct-deleted");
      const creator = await user(account, "The creator");
      const deleter = await user(account, "The deleter");
      const cell = freshArea();
      const created = await api().createOne(creator, env, { alt_id: unique("alt"), geometry: cell(0, 0, 10, 10) });
      expect((await api().remove(deleter, env, created.id)).ok).toBe(true);

      const gone = await api().get(creator, env, created.id);
      expect(gone.ok ? "found" : gone.status).toBe(api().notFound);
      for (const token of [creator, deleter]) {
        const events = await api().events(token, env, created.id);
        expect(outline(events)).toEqual(["1 created", "2 deleted"]);
        expect(events[0].by).toBe("The creator");
        expect(events[1].by).toBe("The deleter");
        expect(events[1].at >= events[0].at).toBe(true);
        // Production keeps the record as created; the sandbox lets it go with the source (§14).
        if (env === "production") expect(events[0].record).toEqual(created.native);
        else expect(events[0].record).toBeUndefined();
      }
      // Its conflicts are those of a live source only.
      const conflicts = await api().conflicts(creator, env, created.id);
      expect(conflicts.ok ? "found" : conflicts.status).toBe(api().notFound);
      // An admin reads the history too.
      const admin = await h.server.adminToken();
      expect(outline(await api().events(admin, env, created.id))).toEqual(["1 created", "2 deleted"]);
    });

    it("not found exactly like GET /sources/{id}: unknown ids, another account's, the other environment's, a deleted one (conflicts)", async () => {
      const token = await user(unique("acct-404"), "Owner");
      const other = await user(unique("acct-404-other"), "Other");
      const cell = freshArea();
      const theirs = await api().createOne(other, env, { alt_id: unique("alt"), geometry: cell(0, 0, 10, 10) });
      const otherEnv: Env = env === "production" ? "sandbox" : "production";
      const elsewhere = await api().createOne(token, otherEnv, {
        alt_id: unique("alt"),
        geometry: cell(20, 0, 30, 10),
      });
      const deleted = await api().createOne(token, env, { alt_id: unique("alt"), geometry: cell(40, 0, 50, 10) });
      expect((await api().remove(token, env, deleted.id)).ok).toBe(true);

      const ids = [
        "src_00000000000000000000000000",
        "sandbox_00000000-0000-4000-8000-000000000000",
        "nope",
        "x".repeat(300),
        theirs.id,
        elsewhere.id,
        // An empty id (RPC only: REST has no path for it) is refused as GetSource refuses it.
        ...(protocol === "rest" ? [] : [""]),
      ];
      for (const id of ids) {
        const get = await api().get(token, env, id);
        expect(get.ok, id).toBe(false);
        expect(await api().history(token, env, id), `history of ${id}`).toEqual(get);
        expect(await api().conflicts(token, env, id), `conflicts of ${id}`).toEqual(get);
      }
      // Another account's id answers as an unknown id of the same form does.
      const theirsAnswer = await api().history(token, env, theirs.id);
      const unknownId =
        env === "production" ? "src_00000000000000000000000000" : "sandbox_00000000-0000-4000-8000-000000000000";
      const unknown = await api().history(token, env, unknownId);
      expect(JSON.stringify(theirsAnswer).replaceAll(theirs.id, unknownId)).toBe(JSON.stringify(unknown));

      // A deleted source: GET and conflicts are not found alike; its history answers.
      const get = await api().get(token, env, deleted.id);
      expect(await api().conflicts(token, env, deleted.id)).toEqual(get);
      expect((await api().history(token, env, deleted.id)).ok).toBe(true);
      // Deleted by its owner, still another account's for everyone else.
      expect(await api().history(other, env, deleted.id)).toEqual(await api().get(other, env, deleted.id));
    });

    it("a token without read:sources is refused as GET is", async () => {
      const account = unique("acct-scope");
      const token = await user(account, "Owner");
      const writer = await h.server.userToken(account, { scope: "write:sources delete:sources" });
      const created = await api().createOne(token, env, { alt_id: unique("alt"), geometry: freshArea()(0, 0, 10, 10) });
      const get = await api().get(writer, env, created.id);
      expect(get.ok).toBe(false);
      expect(get.ok ? "" : get.status).toBe(
        protocol === "rest" ? "403" : protocol === "grpc" ? "PERMISSION_DENIED" : "403 permission_denied",
      );
      expect(await api().history(writer, env, created.id)).toEqual(get);
      expect(await api().conflicts(writer, env, created.id)).toEqual(get);
      const reader = await h.server.userToken(account, { scope: "read:sources" });
      expect(outline(await api().events(reader, env, created.id))).toEqual(["1 created"]);
    });
  });

  describe("production", () => {
    const env: Env = "production";

    it("a conflict across accounts: `conflict_set` on both sides at the later create, counterpart by ref, by null; an admin sees all", async () => {
      const accountA = unique("acct-A");
      const accountB = unique("acct-B");
      const tokenA = await user(accountA, "Actor of A");
      const tokenB = await user(accountB, "Actor of B");
      const cell = freshArea();
      const a = await api().createOne(tokenA, env, { alt_id: unique("alt-a"), geometry: cell(0, 0, 10, 10) });
      expect(a.conflict).toBe(false);
      const b = await api().createOne(tokenB, env, { alt_id: unique("alt-b"), geometry: cell(5, 0, 15, 10) });
      expect(b.conflict).toBe(true);
      const bAt = createdAtOf(protocol, b.native);

      const historyA = await api().events(tokenA, env, a.id);
      expect(outline(historyA)).toEqual(["1 created", "2 conflict_set"]);
      // The record as created: not yet in conflict.
      expect(historyA[0].record).toEqual(a.native);
      expect(historyA[0].by).toBe("Actor of A");
      const setOnA = historyA[1];
      expect(setOnA.at).toBe(bAt);
      expect(setOnA.by, "B's actor is not A's to see").toBeNull();
      expect(Object.keys(setOnA.counterpart ?? {})).toEqual(["ref"]);

      const historyB = await api().events(tokenB, env, b.id);
      expect(outline(historyB)).toEqual(["1 created", "2 conflict_set"]);
      expect(historyB[0].record).toEqual(b.native);
      expect(historyB[1].at).toBe(bAt);
      expect(historyB[1].by, "a conflict event with another account's counterpart hides its actor").toBeNull();
      expect(historyB[1].counterpart).toEqual(setOnA.counterpart);

      // An admin sees both sides in full.
      const admin = await h.server.adminToken();
      const adminA = await api().events(admin, env, a.id);
      expect(adminA[1].by).toBe("Actor of B");
      expect(adminA[1].counterpart).toEqual({ id: b.id, alt_id: b.altId, account_id: accountB });
      const adminB = await api().events(admin, env, b.id);
      expect(adminB[1].by).toBe("Actor of B");
      expect(adminB[1].counterpart).toEqual({ id: a.id, alt_id: a.altId, account_id: accountA });
      // Apart from `by` and the counterpart, the admin's events are the owner's.
      const bare = (events: typeof historyA) => events.map(({ by: _by, counterpart: _c, ...rest }) => rest);
      expect(bare(adminA)).toEqual(bare(historyA));
      expect(bare(adminB)).toEqual(bare(historyB));
    });

    it("a conflict in one account: counterpart id and alt_id on both sides, by the creator (another user of the account)", async () => {
      const account = unique("acct-same");
      const first = await user(account, "First user");
      const second = await user(account, "Second user");
      const cell = freshArea();
      const a = await api().createOne(first, env, { alt_id: unique("alt-a"), geometry: cell(0, 0, 10, 10) });
      const b = await api().createOne(second, env, { alt_id: unique("alt-b"), geometry: cell(0, 5, 10, 15) });
      expect(b.conflict).toBe(true);
      for (const token of [first, second]) {
        const historyA = await api().events(token, env, a.id);
        expect(outline(historyA)).toEqual(["1 created", "2 conflict_set"]);
        expect(historyA[1].by).toBe("Second user");
        expect(historyA[1].counterpart).toEqual({ id: b.id, alt_id: b.altId });
        const historyB = await api().events(token, env, b.id);
        expect(outline(historyB)).toEqual(["1 created", "2 conflict_set"]);
        expect(historyB[1].by).toBe("Second user");
        expect(historyB[1].counterpart).toEqual({ id: a.id, alt_id: a.altId });
      }
    });

    it("one create request whose two sources overlap: a pair in the batch, `conflict_set` on both", async () => {
      const account = unique("acct-batch");
      const token = await user(account, "Batcher");
      const cell = freshArea();
      const [a, b] = await api().create(token, env, [
        { alt_id: unique("alt-a"), geometry: cell(0, 0, 10, 10) },
        { alt_id: unique("alt-b"), geometry: cell(5, 5, 15, 15) },
      ]);
      expect([a.conflict, b.conflict]).toEqual([true, true]);
      const historyA = await api().events(token, env, a.id);
      const historyB = await api().events(token, env, b.id);
      expect(outline(historyA)).toEqual(["1 created", "2 conflict_set"]);
      expect(outline(historyB)).toEqual(["1 created", "2 conflict_set"]);
      expect(historyA[1].counterpart).toEqual({ id: b.id, alt_id: b.altId });
      expect(historyB[1].counterpart).toEqual({ id: a.id, alt_id: a.altId });
      expect(historyB[0].record).toEqual(b.native);
      expect(await api().flag(token, env, a.id)).toBe(true);
    });

    it("deletes: `conflict_cleared` on the survivor per lost pair (same counterpart as its `conflict_set`); the flag clears with the last pair only", async () => {
      const accountA = unique("acct-A");
      const accountB = unique("acct-B");
      const tokenA = await user(accountA, "Actor of A");
      const deleterA = await user(accountA, "Deleter of A");
      const tokenB = await user(accountB, "Actor of B");
      const cell = freshArea();
      const a = await api().createOne(tokenA, env, { alt_id: unique("alt-a"), geometry: cell(0, 0, 20, 10) });
      const b = await api().createOne(tokenB, env, { alt_id: unique("alt-b"), geometry: cell(-5, 0, 5, 10) });
      const c = await api().createOne(tokenA, env, { alt_id: unique("alt-c"), geometry: cell(15, 0, 25, 10) });
      expect([b.conflict, c.conflict]).toEqual([true, true]);
      const before = await api().events(tokenA, env, a.id);
      expect(outline(before)).toEqual(["1 created", "2 conflict_set", "3 conflict_set"]);
      const [refB, sameC] = [before[1].counterpart, before[2].counterpart];
      expect(Object.keys(refB ?? {})).toEqual(["ref"]);
      expect(sameC).toEqual({ id: c.id, alt_id: c.altId });

      // B deletes its source by alt_id: A's source loses one pair of two and stays flagged.
      expect((await api().removeByAlt(tokenB, env, b.altId)).ok).toBe(true);
      expect(await api().flag(tokenA, env, a.id)).toBe(true);
      const afterB = await api().events(tokenA, env, a.id);
      expect(outline(afterB)).toEqual(["1 created", "2 conflict_set", "3 conflict_set", "4 conflict_cleared"]);
      expect(afterB.slice(0, 3)).toEqual(before);
      expect(afterB[3].counterpart).toEqual(refB);
      expect(afterB[3].by, "B's deleting actor is not A's to see").toBeNull();
      expect(await api().flag(tokenA, env, c.id), "c's pair with a remains").toBe(true);

      // A deletes its own c: the last pair goes, the flag clears, the actor shows.
      expect((await api().remove(deleterA, env, c.id)).ok).toBe(true);
      expect(await api().flag(tokenA, env, a.id)).toBe(false);
      const afterC = await api().events(tokenA, env, a.id);
      expect(outline(afterC)).toEqual([
        "1 created",
        "2 conflict_set",
        "3 conflict_set",
        "4 conflict_cleared",
        "5 conflict_cleared",
      ]);
      expect(afterC[4].counterpart).toEqual({ id: c.id, alt_id: c.altId });
      expect(afterC[4].by).toBe("Deleter of A");
      const ats = afterC.map((e) => e.at);
      expect([...ats].sort()).toEqual(ats);

      // The deleted ones keep their own history, ending in `deleted` (no `conflict_cleared` of their own).
      const historyB = await api().events(tokenB, env, b.id);
      expect(outline(historyB)).toEqual(["1 created", "2 conflict_set", "3 deleted"]);
      expect(historyB[2].by).toBe("Actor of B");
      expect(historyB[2].at).toBe(afterB[3].at);
      const historyC = await api().events(tokenA, env, c.id);
      expect(outline(historyC)).toEqual(["1 created", "2 conflict_set", "3 deleted"]);
      expect(historyC[1].counterpart).toEqual({ id: a.id, alt_id: a.altId });
      expect(historyC[2].by).toBe("Deleter of A");
      expect(historyC[2].at).toBe(afterC[4].at);
    });
  });

  describe("sandbox", () => {
    it("overlapping sandbox sources record no conflict: only `created` and `deleted`", async () => {
      const account = unique("acct-sbx");
      const token = await user(account, "Sandboxer");
      const cell = freshArea();
      const a = await api().createOne(token, "sandbox", { alt_id: unique("alt-a"), geometry: cell(0, 0, 10, 10) });
      const b = await api().createOne(token, "sandbox", { alt_id: unique("alt-b"), geometry: cell(0, 0, 10, 10) });
      expect([a.conflict, b.conflict]).toEqual([false, false]);
      expect(outline(await api().events(token, "sandbox", a.id))).toEqual(["1 created"]);
      expect(await api().conflictList(token, "sandbox", a.id)).toEqual([]);
      expect((await api().remove(token, "sandbox", b.id)).ok).toBe(true);
      expect(outline(await api().events(token, "sandbox", a.id))).toEqual(["1 created"]);
      expect(outline(await api().events(token, "sandbox", b.id))).toEqual(["1 created", "2 deleted"]);
    });
  });
});
