import { describe, expect, it } from "vitest";
import { configSchema } from "../../../functions/core/config/config-schema.ts";
import { buildModel } from "../../../functions/core/config/network-model.ts";
import { makeScrubber } from "../../../functions/core/config/redact.ts";
import {
  configChange,
  EVENT_DETAIL_MAX_CHARS,
  EVENT_REASON_MAX_CHARS,
  eventRetentionSeconds,
  eventStatus,
  type GatewayEvent,
  type HeadStallRule,
  headStallEvent,
  headStallTransition,
  makeEvent,
  newestFirst,
  type ObservedHead,
  quorumTransitions,
  type StoredEvent,
} from "../../../functions/core/status/events.ts";

/**
 * The pure part of the event log: events built with their free text scrubbed and bounded,
 * lists merged newest first, and the rules that turn a quorum, a head or a config into events.
 */

const NOW = 1_800_000_000_000;
const KEY = "abcdef0123456789abcdef";
const URL = `https://eth.example.com/v3/${KEY}`;
const scrub = makeScrubber([{ resolved: URL, redacted: "https://eth.example.com/v3/***" }], [KEY]);

const event = (fields: Partial<GatewayEvent> = {}): GatewayEvent => ({
  network: "eth",
  at: NOW,
  provider: "main",
  kind: "blacklisted",
  reason: "connection",
  detail: "",
  ...fields,
});

describe("makeEvent", () => {
  it.each([
    [
      "a resolved URL in an upstream message",
      `connect ECONNREFUSED ${URL}`,
      "connect ECONNREFUSED https://eth.example.com/v3/***",
    ],
    ["a key on its own", `invalid key ${KEY} given`, "invalid key *** given"],
    ["an URL-encoded key", `?apikey=${encodeURIComponent(KEY)}`, "?apikey=***"],
    ["text without secrets", "rate limit exceeded", "rate limit exceeded"],
  ])("scrubs %s from the detail", (_name, detail, expected) => {
    expect(makeEvent(event({ detail }), scrub).detail).toBe(expected);
  });

  it("scrubs the reason too, and keeps the other fields", () => {
    const made = makeEvent(event({ reason: `bad ${KEY}` }), scrub);
    expect(made).toEqual({ ...event(), reason: "bad ***" });
  });

  it("cuts a long detail and reason to their bounds, after scrubbing (no half secret left)", () => {
    // Cut first, the cut would fall inside the key and leave its first half unrecognised.
    const padding = "x".repeat(EVENT_DETAIL_MAX_CHARS - 40);
    const made = makeEvent(
      event({ detail: `${padding} ${URL} and ${"y".repeat(60)}`, reason: "r".repeat(500) }),
      scrub,
    );
    expect(made.detail).toHaveLength(EVENT_DETAIL_MAX_CHARS);
    expect(made.detail.endsWith("…")).toBe(true);
    expect(made.detail).not.toContain(KEY.slice(0, 8));
    expect(made.reason).toHaveLength(EVENT_REASON_MAX_CHARS);
  });
});

describe("newestFirst", () => {
  const stored = (id: string, at: number): StoredEvent => ({ ...event({ at }), id });

  it.each<[string, StoredEvent[][], number, string[]]>([
    [
      "one list, out of order",
      [[stored("a", 1), stored("c", 3), stored("b", 2)]],
      10,
      ["c", "b", "a"],
    ],
    [
      "two lists interleaved",
      [[stored("a", 1), stored("c", 3)], [stored("b", 2)]],
      10,
      ["c", "b", "a"],
    ],
    ["the same event in both lists once", [[stored("a", 1)], [stored("a", 1)]], 10, ["a"]],
    [
      "the same millisecond, by id",
      [[stored("E#1#aa", 5), stored("E#1#bb", 5)]],
      10,
      ["E#1#bb", "E#1#aa"],
    ],
    ["at most the limit", [[stored("a", 1), stored("b", 2), stored("c", 3)]], 2, ["c", "b"]],
    ["nothing", [[], []], 5, []],
  ])("%s", (_name, lists, limit, ids) => {
    expect(newestFirst(lists, limit).map((item) => item.id)).toEqual(ids);
  });
});

describe("eventStatus", () => {
  it("is exactly at (ISO), provider, kind, reason and detail", () => {
    expect(eventStatus({ ...event({ detail: "d" }), network: "eth" })).toEqual({
      at: new Date(NOW).toISOString(),
      provider: "main",
      kind: "blacklisted",
      reason: "connection",
      detail: "d",
    });
  });
});

describe("headStallTransition", () => {
  const rule: HeadStallRule = { blockTimeSeconds: 12, stallBlockTimes: 5 };
  /** A head read at NOW whose block is `age` seconds old. */
  const head = (age: number, number: number | null = 100, at = NOW): ObservedHead => ({
    number,
    timestamp: number === null ? null : at / 1000 - age,
    at,
  });

  it.each<[string, ObservedHead | null, ObservedHead, string | null]>([
    ["moving, then moving", head(10), head(12), null],
    ["moving, then stalled (over 60 s)", head(10), head(61), "head_stalled"],
    ["exactly 5 block times is not yet stalled", head(10), head(60), null],
    ["stalled, then still stalled: reported once", head(90), head(150), null],
    ["stalled, then a new block", head(90), head(3), "head_resumed"],
    ["no previous reading, stalled", null, head(61), "head_stalled"],
    ["no previous reading, moving", null, head(5), null],
    ["no head now (no quorum): nothing", head(90), head(0, null), null],
    ["no head before, stalled now", head(0, null), head(61), "head_stalled"],
  ])("%s", (_name, previous, current, kind) => {
    expect(headStallTransition(previous, current, rule)?.kind ?? null).toBe(kind);
  });

  it.each<[string, number, string | null]>([
    [
      "regression: 0.25 s blocks, a moving head read 2 s old was a stall; now under the 10 s floor it is not",
      2,
      null,
    ],
    ["0.25 s blocks, exactly the 10 s floor is not yet stalled", 10, null],
    ["0.25 s blocks, over the 10 s floor", 11, "head_stalled"],
  ])("%s", (_name, age, kind) => {
    const fast: HeadStallRule = { blockTimeSeconds: 0.25, stallBlockTimes: 5 };
    expect(headStallTransition(head(1), head(age), fast)?.kind ?? null).toBe(kind);
  });

  it("names the floor when it, not the block times, is the limit", () => {
    const fast: HeadStallRule = { blockTimeSeconds: 0.25, stallBlockTimes: 5 };
    expect(headStallTransition(head(1), head(30), fast)?.detail).toBe(
      "head 100 is 30 s old, over 10 s (the least, above 5 block times of 0.25 s)",
    );
  });

  it("says how old the head is against the rule", () => {
    expect(headStallTransition(head(10), head(75), rule)).toEqual({
      kind: "head_stalled",
      reason: "no_new_block",
      detail: "head 100 is 75 s old, over 5 block times of 12 s",
    });
    expect(headStallTransition(head(75), head(2), rule)).toEqual({
      kind: "head_resumed",
      reason: "new_block",
      detail: "head 100 is 2 s old, within 5 block times of 12 s",
    });
  });
});

describe("headStallEvent", () => {
  const rule: HeadStallRule = { blockTimeSeconds: 2, stallBlockTimes: 5 };
  const head = (age: number): ObservedHead => ({ number: 7, timestamp: NOW / 1000 - age, at: NOW });

  it("is the network's event at the reading's time, or null", () => {
    expect(headStallEvent("base", head(1), head(11), rule)).toEqual({
      network: "base",
      at: NOW,
      provider: null,
      kind: "head_stalled",
      reason: "no_new_block",
      detail: "head 7 is 11 s old, over 5 block times of 2 s",
    });
    expect(headStallEvent("base", head(1), head(2), rule)).toBeNull();
  });
});

describe("quorumTransitions", () => {
  it.each<
    [
      string,
      Parameters<typeof quorumTransitions>[0],
      Parameters<typeof quorumTransitions>[1],
      unknown[],
    ]
  >([
    [
      "a member leaves",
      { members: ["a", "b"], excluded: {} },
      { members: ["b"], excluded: { a: "no_answer" } },
      [{ provider: "a", kind: "quorum_excluded", reason: "no_answer" }],
    ],
    [
      "it comes back: the reason it had been out",
      { members: ["b"], excluded: { a: "failed_recently" } },
      { members: ["a", "b"], excluded: {} },
      [{ provider: "a", kind: "quorum_rejoined", reason: "failed_recently" }],
    ],
    [
      "out for another reason: the same exclusion",
      { members: ["b"], excluded: { a: "no_answer" } },
      { members: ["b"], excluded: { a: "failed_recently" } },
      [],
    ],
    [
      "nothing changes",
      { members: ["a", "b"], excluded: {} },
      { members: ["a", "b"], excluded: {} },
      [],
    ],
    [
      "the first snapshot: every excluded provider",
      null,
      { members: ["b"], excluded: { a: "wrong_chain" } },
      [{ provider: "a", kind: "quorum_excluded", reason: "wrong_chain" }],
    ],
    [
      "a provider new to the config, out at once",
      { members: ["b"], excluded: {} },
      { members: ["b"], excluded: { c: "behind" } },
      [{ provider: "c", kind: "quorum_excluded", reason: "behind" }],
    ],
    [
      "everyone out: each is reported",
      { members: ["a", "b"], excluded: {} },
      { members: [], excluded: { a: "no_answer", b: "no_answer" } },
      [
        { provider: "a", kind: "quorum_excluded", reason: "no_answer" },
        { provider: "b", kind: "quorum_excluded", reason: "no_answer" },
      ],
    ],
  ])("%s", (_name, previous, current, expected) => {
    expect(quorumTransitions(previous, current)).toEqual(expected);
  });
});

describe("configChange", () => {
  const config = configSchema.parse({
    networks: { eth: { chain_id: 1, providers: [{ url: "https://a.example.com" }] } },
  });
  const edited = configSchema.parse({
    networks: { eth: { chain_id: 1, providers: [{ url: "https://b.example.com" }] } },
  });
  const s3 = (etag: string, loadedAt: string) =>
    ({ kind: "s3", etag, loaded_at: loadedAt }) as const;

  it.each([
    [
      s3('"9b2cf5"', "t1"),
      /^s3:[0-9a-f]{8}$/,
      /^the S3 config object, ETag "9b2cf5" \(content [0-9a-f]{8}\)$/,
    ],
    [
      { kind: "bundled", loaded_at: "t2" } as const,
      /^bundled:/,
      /^the copy bundled with the function/,
    ],
    [{ kind: "file", loaded_at: "t3" } as const, /^file:/, /^a local config file \(content /],
  ])("%j", (source, version, detail) => {
    const change = configChange(source, config);
    expect(change.version).toMatch(version);
    expect(change.reason).toBe(source.kind);
    expect(change.detail).toMatch(detail);
  });

  it("the same config is the same version whenever and wherever it was loaded", () => {
    expect(configChange(s3('"a"', "t1"), config).version).toBe(
      configChange(s3('"a"', "t9"), configSchema.parse(structuredClone(config))).version,
    );
    expect(configChange({ kind: "file", loaded_at: "t1" }, config).version).toBe(
      configChange({ kind: "file", loaded_at: "t2" }, config).version,
    );
  });

  it("an edit, or the same content from another source, is a new version", () => {
    const version = configChange(s3('"a"', "t1"), config).version;
    expect(configChange(s3('"b"', "t2"), edited).version).not.toBe(version);
    expect(configChange({ kind: "bundled", loaded_at: "t1" }, config).version).not.toBe(version);
  });
});

describe("eventRetentionSeconds", () => {
  const model = buildModel(
    configSchema.parse({
      events: { retention_days: 7 },
      networks: {
        eth: { chain_id: 1, providers: [{ url: "https://a.example.com" }] },
        base: {
          chain_id: 8453,
          events: { retention_days: 1.5 },
          providers: [{ url: "https://b.example.com" }],
        },
      },
    }),
    (url) => url,
  );

  it("is the network's retention_days in seconds, overridable per network", () => {
    expect(eventRetentionSeconds(model, "eth")).toBe(7 * 86_400);
    expect(eventRetentionSeconds(model, "base")).toBe(1.5 * 86_400);
  });

  it("refuses a network the config does not have", () => {
    expect(() => eventRetentionSeconds(model, "gone")).toThrow(/no network gone/);
  });
});
