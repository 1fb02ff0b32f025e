/**
 * Paging of a source's history and conflicts (docs/api.md §14: "paged like lists") through the
 * real server over REST (each answer's `Link: rel="next"`), gRPC and Connect JSON
 * (`next_page_token`): in production a source with five conflicts walked two at a time gives
 * every event and every conflict once, in the order of the unpaged answer; in the sandbox (no
 * conflicts) a deleted source's history one event a page; a page token of one source's history is
 * refused for another's, and for its conflicts.
 */
import { describe, expect, it } from "vitest";
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

const h = useHistoryServer();

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
