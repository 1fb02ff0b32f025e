import { describe, expect, it } from "vitest";
import { redactedUrl } from "../../src/http/request-log.js";

describe("redactedUrl", () => {
  it.each([
    ["/sources", "/sources"],
    ["/sources?limit=5&methodology=VM0042", "/sources?limit=5&methodology=VM0042"],
    ["/sources?access_token=eyJ.abc.def", "/sources?access_token=[redacted]"],
    ["/sources?limit=1&ACCESS_TOKEN=x&token=y#frag", "/sources?limit=1&ACCESS_TOKEN=[redacted]&token=[redacted]#frag"],
    ["/oauth/token?client_secret=s3cr3t&client_id=c", "/oauth/token?client_secret=[redacted]&client_id=c"],
    // Only whole names: a parameter that merely ends like one is kept.
    ["/sources?page_token=abc&mytoken=1", "/sources?page_token=abc&mytoken=1"],
    // The path is never rewritten, only the query.
    ["/sources/token=1?x=1", "/sources/token=1?x=1"],
  ])("%s → %s", (url, logged) => {
    expect(redactedUrl(url)).toBe(logged);
  });
});
