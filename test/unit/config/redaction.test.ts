import { describe, expect, it } from "vitest";
import {
  makeScrubber,
  makeSecretScrubber,
  redactTemplate,
  redactUrl,
  secretPartsOf,
} from "../../../functions/core/config/redact.ts";

/**
 * Redaction and scrubbing at their edges (docs/behaviour.md §7.3, §8.4): which path segments
 * pass as words, which parts of a URL count as secrets, and the order in which a scrubber
 * replaces overlapping needles. The everyday cases, through the config model, are in
 * config-model.test.ts.
 */

describe("redactUrl: a path segment is kept only as a word or a version", () => {
  it.each([
    ["v3", true],
    ["v123", true],
    ["v1.25", true],
    ["V2", true],
    ["rpc12", true],
    ["eth-mainnet", true],
    // 24 characters at most.
    ["abcdefghijklmnopqrstuvwx", true],
    ["abcdefghijklmnopqrstuvwxy", false],
    ["v1234567890123456789012345", false],
    // Three digits make a key, outside a version.
    ["rpc123", false],
    ["9abc", false],
    ["12345v3", false],
    ["v3abcdef1234567890", false],
    ["abc%21def", false],
  ])("%s kept: %s", (segment, kept) => {
    const redacted = redactUrl(`https://x.test/${segment}/rpc`);
    expect(redacted).toBe(`https://x.test/${kept ? segment : "***"}/rpc`);
  });

  it("a placeholder is masked wherever it stands, the host too", () => {
    expect(redactTemplate("https://${SUB}.alchemy.com/v2/${KEY}?k=${Q}")).toBe(
      "https://***.alchemy.com/v2/***?k=***",
    );
  });
});

describe("secretPartsOf: the URL's parts scrubbed as secrets", () => {
  it.each<[string, string[]]>([
    ["not a url", []],
    // Seven characters are too short to be taken for a key; eight are not.
    ["https://x.test/Abc1234", []],
    ["https://x.test/Abc12345", ["Abc12345"]],
  ])("%s → %j", (url, parts) => {
    expect(secretPartsOf(url)).toEqual(parts);
  });
});

describe("makeScrubber: free text for logs, metrics and errors", () => {
  it("replaces a resolved URL by its redacted form, with or without its trailing slashes", () => {
    const scrub = makeScrubber(
      [{ resolved: "https://rpc.test/k3yk3yk3y//", redacted: "https://rpc.test/***/" }],
      [],
    );
    expect(scrub("GET https://rpc.test/k3yk3yk3y// failed")).toBe(
      "GET https://rpc.test/***/ failed",
    );
    expect(scrub("connect to https://rpc.test/k3yk3yk3y: refused")).toBe(
      "connect to https://rpc.test/***/: refused",
    );
  });

  it("masks secrets of 4 characters or more, raw and percent-encoded, the longest first", () => {
    const scrub = makeScrubber([], ["abc", "k3y/", "SECRETKEY", "SECRETKEY123"]);
    expect(scrub("abc k3y/ k3y%2F SECRETKEY123 SECRETKEY")).toBe("abc *** *** *** ***");
  });
});

describe("makeSecretScrubber: answers to callers", () => {
  it("masks secrets of 8 characters or more as whole tokens, the longest first", () => {
    const scrub = makeSecretScrubber(["short77", "abcdefgh", "abcdefgh-xyz", "zz-abcdefgh-xyz"]);
    expect(scrub('"short77 abcdefgh-xyz, zz-abcdefgh-xyz and abcdefgh"')).toBe(
      '"short77 ***, *** and ***"',
    );
  });
});
