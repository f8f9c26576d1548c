import { describe, expect, it } from "vitest";
import { firstBlockOf, oldestResumable } from "../../../functions/core/subscriptions/resume.ts";
import {
  MAX_FILTER_BYTES,
  readSubscribe,
  readUnsubscribe,
} from "../../../functions/core/subscriptions/subscribe-params.ts";
import {
  subscriptionIdFrom,
  subscriptionIdOf,
} from "../../../functions/core/subscriptions/subscription-id.ts";

/**
 * `eth_subscribe` / `eth_unsubscribe` params as geth reads them, our `resumeFrom`, and where a
 * stream starts (docs/behaviour.md "Subscriptions over WebSocket").
 */

const ADDRESS = `0x${"Ab".repeat(20)}`;
const TOPIC = `0x${"Cd".repeat(32)}`;
const OTHER_TOPIC = `0x${"ef".repeat(32)}`;

describe("eth_subscribe params", () => {
  it.each([
    ["newHeads", ["newHeads"], { kind: "newHeads", filter: null, resumeFrom: null }],
    [
      "newHeads with null options",
      ["newHeads", null],
      { kind: "newHeads", filter: null, resumeFrom: null },
    ],
    [
      "newHeads resuming",
      ["newHeads", { resumeFrom: "0x10" }],
      { kind: "newHeads", filter: null, resumeFrom: 16 },
    ],
    [
      "newHeads, unknown members ignored",
      ["newHeads", { includeTransactions: true }],
      { kind: "newHeads", filter: null, resumeFrom: null },
    ],
    ["logs of anything", ["logs", {}], { kind: "logs", filter: {}, resumeFrom: null }],
    [
      "logs of one address, lower-cased",
      ["logs", { address: ADDRESS }],
      { kind: "logs", filter: { address: [ADDRESS.toLowerCase()] }, resumeFrom: null },
    ],
    [
      "logs of addresses, duplicates once",
      ["logs", { address: [ADDRESS, ADDRESS.toLowerCase()] }],
      { kind: "logs", filter: { address: [ADDRESS.toLowerCase()] }, resumeFrom: null },
    ],
    [
      "an empty address list is any address",
      ["logs", { address: [] }],
      { kind: "logs", filter: {}, resumeFrom: null },
    ],
    [
      "topic positions: one, any, any of several",
      ["logs", { topics: [TOPIC, null, [TOPIC, OTHER_TOPIC]] }],
      {
        kind: "logs",
        filter: { topics: [TOPIC.toLowerCase(), null, [TOPIC.toLowerCase(), OTHER_TOPIC]] },
        resumeFrom: null,
      },
    ],
    [
      "a list with null in it, or empty, is any topic there",
      ["logs", { topics: [[TOPIC, null], []] }],
      { kind: "logs", filter: { topics: [null, null] }, resumeFrom: null },
    ],
    ["no topics", ["logs", { topics: [] }], { kind: "logs", filter: {}, resumeFrom: null }],
    [
      "fromBlock/toBlock latest are what a subscription does anyway",
      ["logs", { fromBlock: "latest", toBlock: "latest" }],
      { kind: "logs", filter: {}, resumeFrom: null },
    ],
    [
      "logs resuming",
      ["logs", { address: ADDRESS, resumeFrom: "0x0" }],
      { kind: "logs", filter: { address: [ADDRESS.toLowerCase()] }, resumeFrom: 0 },
    ],
  ])("%s", (_name, params, expected) => {
    expect(readSubscribe(params)).toEqual({ ok: true, value: expected });
  });

  it.each([
    ["no params", undefined, -32602, /takes the kind of subscription first/],
    ["empty params", [], -32602, /takes the kind of subscription first/],
    ["a kind that is no string", [1], -32602, /takes the kind of subscription first/],
    ["too many", ["newHeads", {}, {}], -32602, /at most 2/],
    [
      "pending transactions",
      ["newPendingTransactions"],
      -32601,
      /"newPendingTransactions" subscriptions are not served/,
    ],
    ["syncing", ["syncing"], -32601, /not served by this gateway/],
    ["logs without a filter", ["logs"], -32602, /logs takes a filter object/],
    [
      "newHeads with options of another shape",
      ["newHeads", "0x1"],
      -32602,
      /newHeads takes no options but/,
    ],
    ["a history range", ["logs", { fromBlock: "0x1" }], -32602, /follows new blocks only/],
    ["a block hash", ["logs", { blockHash: TOPIC }], -32602, /follows new blocks only/],
    ["a bad address", ["logs", { address: "0x12" }], -32602, /address must be an address/],
    [
      "a bad address in a list",
      ["logs", { address: [ADDRESS, 5] }],
      -32602,
      /address must be an address/,
    ],
    ["topics not a list", ["logs", { topics: TOPIC }], -32602, /topics must be a list/],
    ["a bad topic", ["logs", { topics: ["0x1"] }], -32602, /each topic must be/],
    [
      "five topic positions",
      ["logs", { topics: [null, null, null, null, null] }],
      -32000,
      /exceed max topics/,
    ],
    [
      "regression: resumeFrom misspelt was ignored, a fresh stream with a gap the client never heard of",
      ["newHeads", { resume_from: "0x10" }],
      -32602,
      /unknown member "resume_from": resuming takes resumeFrom/,
    ],
    [
      "resumeFrom misspelt in a logs filter",
      ["logs", { address: ADDRESS, resumefrom: "0x10" }],
      -32602,
      /unknown member "resumefrom"/,
    ],
    [
      "resumeFrom not hex",
      ["newHeads", { resumeFrom: 16 }],
      -32602,
      /resumeFrom must be the last block number seen/,
    ],
    [
      "resumeFrom with a leading zero",
      ["newHeads", { resumeFrom: "0x010" }],
      -32602,
      /resumeFrom must be/,
    ],
    [
      "resumeFrom past 2^52",
      ["newHeads", { resumeFrom: `0x${"f".repeat(14)}` }],
      -32602,
      /resumeFrom must be/,
    ],
  ])("refused: %s", (_name, params, code, message) => {
    const read = readSubscribe(params);
    expect(read.ok).toBe(false);
    if (read.ok) return;
    expect(read.error.code).toBe(code);
    expect(read.error.message).toMatch(message);
  });

  it("a filter over its byte bound is refused, naming the bound", () => {
    const addresses = Array.from(
      { length: 1000 },
      (_, index) => `0x${index.toString(16).padStart(40, "0")}`,
    );
    const read = readSubscribe(["logs", { address: addresses }]);
    expect(read.ok).toBe(false);
    if (!read.ok) expect(read.error.message).toContain(`over ${MAX_FILTER_BYTES}`);
  });

  it("a kind name is cut short in the error, never echoed whole", () => {
    const read = readSubscribe(["x".repeat(10_000)]);
    expect(read.ok).toBe(false);
    if (!read.ok) expect(read.error.message.length).toBeLessThan(200);
  });
});

describe("eth_unsubscribe params", () => {
  it.each([
    ["an id", ["0xabc"], { ok: true, value: "0xabc" }],
    ["no params", [], { ok: false }],
    ["a number", [5], { ok: false }],
    ["two ids", ["0x1", "0x2"], { ok: false }],
  ])("%s", (_name, params, expected) => {
    expect(readUnsubscribe(params)).toMatchObject(expected);
  });
});

describe("subscription ids", () => {
  it("are 0x and 32 hex digits of 16 random bytes, read back in lower case only in that shape", () => {
    const id = subscriptionIdOf(Uint8Array.from({ length: 16 }, (_, index) => index * 16));
    expect(id).toBe("0x00102030405060708090a0b0c0d0e0f0");
    expect(subscriptionIdFrom(id.toUpperCase().replace("0X", "0x"))).toBe(id);
    for (const junk of ["0x1", `${id}0`, id.slice(2), 7, null])
      expect(subscriptionIdFrom(junk)).toBeNull();
    expect(() => subscriptionIdOf(new Uint8Array(8))).toThrow(RangeError);
  });
});

describe("where a stream starts", () => {
  const window = { head: 1000, windowSeconds: 600, blockTimeSeconds: 12 };
  it.each([
    ["fresh: the block after the served head", null, window, 1001],
    ["resuming after the head itself: the same", 1000, window, 1001],
    ["resuming within the window", 990, window, 991],
    ["resuming from the oldest block the window holds (50 blocks of 12 s)", 950, window, 951],
    ["fast chains hold more blocks (600 of 1 s)", 400, { ...window, blockTimeSeconds: 1 }, 401],
    ["an early chain: the window reaches block 0", 0, { ...window, head: 10 }, 1],
  ])("%s", (_name, resumeFrom, at, first) => {
    expect(firstBlockOf(resumeFrom, at)).toEqual({ ok: true, value: first });
  });

  it.each([
    [
      "a block before the window, naming the oldest one",
      949,
      window,
      /outside the resume window \(600 s\): the oldest block to resume from is 0x3b6/,
    ],
    ["a block ahead of the head", 1001, window, /ahead of the chain's head 0x3e8/],
    [
      "any block behind the head, with resuming off",
      999,
      { ...window, windowSeconds: 0 },
      /outside the resume window/,
    ],
  ])("refused: %s", (_name, resumeFrom, at, message) => {
    const first = firstBlockOf(resumeFrom, at);
    expect(first).toMatchObject({ ok: false, error: { code: -32602 } });
    if (!first.ok) expect(first.error.message).toMatch(message);
  });

  it("the oldest resumable block never goes below 0", () => {
    expect(oldestResumable({ head: 3, windowSeconds: 600, blockTimeSeconds: 2 })).toBe(0);
    expect(oldestResumable(window)).toBe(950);
  });
});
