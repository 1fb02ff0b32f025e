/**
 * Paging of a source's history and conflicts (docs/api.md §14: "paged like lists") through the
 * real server over REST (each answer's `Link: rel="next"`), gRPC and Connect JSON
 * (`next_page_token`): in production a source with five conflicts walked two at a time gives
 * every event and every conflict once, in the order of the unpaged answer; in the sandbox (no
 * conflicts) a deleted source's history one event a page; a page token of one source's history is
 * refused for another's and for its conflicts, and a conflicts token of the version before (keyed
 * on detected_at and a ref) is refused, on every protocol.
 */
import { describe, expect, it } from "vitest";
import { PageTokens, pageTokenKey } from "../../src/ledger/page-token.js";
import {
  type Env,
  freshArea,
  type HistoryClient,
  outline,
  PROTOCOLS,
  unique,
  useHistoryServer,
} from "./history-support.js";
import { nextLink, tokenOf } from "./paging-support.js";

/** The ledger's secret, known here so that a test can make a page token as an earlier version did. */
const SECRET = Buffer.alloc(32, 5);
const h = useHistoryServer({ LEDGER_SECRET: SECRET.toString("base64") });

/** What each protocol answers for a page token that does not belong to the listing. */
const REFUSED: Record<(typeof PROTOCOLS)[number], string> = {
  rest: "422",
  grpc: "INVALID_ARGUMENT",
  connect: "400 invalid_argument",
};

/** A source and five later ones, each overlapping it (and not each other): its history has 6 events, 5 conflicts. */
async function sourceWithFiveConflicts(api: HistoryClient, token: string, env: Env) {
  const cell = freshArea();
  const subject = await api.createOne(token, env, {
    alt_id: unique("subject"),
    geometry: cell(0, 0, 50, 10),
    attribute_type: ["CARBON_REMOVAL"],
  });
  const others = [];
  for (let k = 0; k < 5; k++) {
    others.push(
      await api.createOne(token, env, {
        alt_id: unique(`other-${k}`),
        geometry: cell(k * 10 + 2, 5, k * 10 + 8, 20),
        attribute_type: ["CARBON_REMOVAL"],
      }),
    );
  }
  return { subject, others };
}

describe.each(PROTOCOLS)("%s", (protocol) => {
  const api = () => h.clients[protocol];

  it("production: walks a history and its conflicts two at a time, each item once, in the unpaged order", async () => {
    const token = await h.server.userToken(unique("acct-paging"));
    const { subject, others } = await sourceWithFiveConflicts(api(), token, "production");

    const events = await api().events(token, "production", subject.id);
    expect(outline(events)).toEqual([
      "1 created",
      "2 conflict_set",
      "3 conflict_set",
      "4 conflict_set",
      "5 conflict_set",
      "6 conflict_set",
    ]);
    const eventPages = await api().walk(token, "production", subject.id, "history", 2);
    expect(eventPages.map((page) => page.length)).toEqual([2, 2, 2]);
    expect(eventPages.flat()).toEqual(events);

    const conflicts = await api().conflictList(token, "production", subject.id);
    expect(conflicts).toHaveLength(5);
    const conflictPages = await api().walk(token, "production", subject.id, "conflicts", 2);
    expect(conflictPages.map((page) => page.length)).toEqual([2, 2, 1]);
    expect(conflictPages.flat()).toEqual(conflicts);
    // The counterparts, in the order of their pairs: the five later sources.
    expect(conflictPages.flat().map((c) => c.counterpart.id)).toEqual(others.map((o) => o.id));

    // One page holding everything has no next page.
    expect(await api().walk(token, "production", subject.id, "history", 6)).toEqual([events]);
  });

  it("sandbox (no conflicts there): a deleted source's history one event a page; its conflicts one empty page", async () => {
    const token = await h.server.userToken(unique("acct-paging-sandbox"));
    const created = await api().createOne(token, "sandbox", {
      alt_id: unique("alt"),
      geometry: freshArea()(0, 0, 10, 10),
    });
    const before = await api().walk(token, "sandbox", created.id, "history", 1);
    expect(before.map((page) => outline(page))).toEqual([["1 created"]]);
    expect((await api().remove(token, "sandbox", created.id)).ok).toBe(true);
    const events = await api().events(token, "sandbox", created.id);
    const pages = await api().walk(token, "sandbox", created.id, "history", 1);
    expect(pages.map((page) => outline(page))).toEqual([["1 created"], ["2 deleted"]]);
    expect(pages.flat()).toEqual(events);
    const live = await api().createOne(token, "sandbox", {
      alt_id: unique("alt"),
      geometry: freshArea()(0, 0, 10, 10),
    });
    expect(await api().walk(token, "sandbox", live.id, "conflicts", 1)).toEqual([[]]);
  });

  it("refuses a page token of another listing: another source's history, the history's on the conflicts, one of an earlier version", async () => {
    const account = unique("acct-refused");
    const token = await h.server.userToken(account);
    const { subject, others } = await sourceWithFiveConflicts(api(), token, "production");
    const first = await api().pageAt(token, "production", subject.id, "history", 2, "");
    if (!first.ok) throw new Error(`first history page: ${first.status}`);
    const historyToken = first.value.nextToken;
    expect(historyToken).not.toBe("");
    // The conflicts token this version makes resumes where it says.
    const conflictsFirst = await api().pageAt(token, "production", subject.id, "conflicts", 2, "");
    if (!conflictsFirst.ok) throw new Error(`first conflicts page: ${conflictsFirst.status}`);
    const rest = await api().pageAt(token, "production", subject.id, "conflicts", 3, conflictsFirst.value.nextToken);
    expect(rest.ok && rest.value.items.map((c) => c.counterpart.id)).toEqual(others.slice(2).map((o) => o.id));
    // A conflicts token as the version before made it: keyed on the last conflict's detected_at and ref.
    const [, second] = conflictsFirst.value.items;
    const binding = JSON.stringify(["production", "conflicts", false, account, subject.id]);
    const keys = new PageTokens(pageTokenKey(SECRET));
    const older = keys.mint(
      { createdAt: Date.parse(second.detected_at), id: second.counterpart.ref ?? second.counterpart.id ?? "" },
      binding,
    );
    // Made the same way in this version's form (after the subject's event 3), it is taken: only the form differs.
    const current = await api().pageAt(
      token,
      "production",
      subject.id,
      "conflicts",
      5,
      keys.mint({ createdAt: 3, id: subject.id }, binding),
    );
    expect(current.ok && current.value.items.map((c) => c.counterpart.id)).toEqual(others.slice(2).map((o) => o.id));
    for (const [id, what, pageToken] of [
      [others[0].id, "history", historyToken],
      [subject.id, "conflicts", historyToken],
      [subject.id, "conflicts", older],
    ] as const) {
      const refused = await api().pageAt(token, "production", id, what, 2, pageToken);
      expect(refused.ok, `${what} of ${id}`).toBe(false);
      if (refused.ok) continue;
      expect(refused.status).toBe(REFUSED[protocol]);
      expect(refused.signature).toContain("page_token");
    }
  });
});

describe("a page token belongs to its listing", () => {
  it("REST: a token of one source's history is 422 at /query/page_token for another source's history, its conflicts, and an unknown id's", async () => {
    const token = await h.server.userToken(unique("acct-token"));
    const { subject, others } = await sourceWithFiveConflicts(h.clients.rest, token, "production");
    const first = await h.server.request("GET", `/sources/${subject.id}/history?limit=2`, { token });
    const pageToken = tokenOf(nextLink(first) ?? "");
    for (const path of [
      `/sources/${others[0].id}/history?limit=2&page_token=${pageToken}`,
      `/sources/${subject.id}/conflicts?limit=2&page_token=${pageToken}`,
      // Checked before the source is looked up: 422, not 404, for an id that names nothing.
      `/sources/src_00000000000000000000000000/history?limit=2&page_token=${pageToken}`,
      `/sources/src_00000000000000000000000000/conflicts?limit=2&page_token=${pageToken}`,
    ]) {
      const refused = await h.server.request("GET", path, { token });
      expect(refused.status).toBe(422);
      const problem = await refused.json();
      expect(problem.errors).toEqual([
        {
          pointer: "/query/page_token",
          detail:
            "page_token does not belong to this listing: it was made for another source, caller or environment, by an earlier version, or was altered; start again without page_token",
        },
      ]);
    }
    // The token still reads its own listing's next page.
    const second = await h.server.request("GET", `/sources/${subject.id}/history?limit=2&page_token=${pageToken}`, {
      token,
    });
    expect(second.status).toBe(200);
    expect((await second.json()).map((e: { seq: number }) => e.seq)).toEqual([3, 4]);
  });
});
