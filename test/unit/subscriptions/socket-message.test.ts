import { describe, expect, it } from "vitest";
import { parseRequest } from "../../../functions/core/jsonrpc/jsonrpc.ts";
import {
  assembleAnswer,
  assembleWithinLimit,
  errorForEveryCall,
  planMessage,
  withinMessageLimit,
} from "../../../functions/core/subscriptions/socket-message.ts";
import { WEBSOCKET_MESSAGE_BYTES } from "../../../functions/core/subscriptions/websocket-quotas.ts";

/**
 * One WebSocket message split between the registry and the pipeline and put back together in
 * the caller's order, and the 128 KB bound on what goes back (docs/behaviour.md
 * "Subscriptions over WebSocket").
 */

const LIMITS = { maxBodyBytes: 1_000_000, maxBatch: 100 };
const parse = (body: string) => parseRequest(body, LIMITS);
const call = (id: unknown, method: string, params: unknown[] = []) =>
  JSON.stringify({ jsonrpc: "2.0", ...(id === undefined ? {} : { id }), method, params });
const ok = (id: unknown, result: unknown) => JSON.stringify({ jsonrpc: "2.0", id, result });

describe("planning a message", () => {
  it.each([
    ["one ordinary call", call(1, "eth_chainId")],
    ["a batch of ordinary calls", `[${call(1, "eth_chainId")},${call(2, "eth_blockNumber")}]`],
    ["unparsable JSON (the pipeline answers its parse error)", "{nope"],
    ["an empty batch", "[]"],
  ])("%s goes to the pipeline unchanged", (_name, body) => {
    expect(planMessage(parse(body))).toEqual({ kind: "pipeline" });
  });

  it("a lone eth_subscribe is the registry's alone", () => {
    const plan = planMessage(parse(call(7, "eth_subscribe", ["newHeads"])));
    expect(plan).toMatchObject({ kind: "split", batch: false, pipelineBody: null });
  });

  it("a batch with registry calls sends only the others to the pipeline, as their own texts", () => {
    const chain = call("a", "eth_chainId");
    const plan = planMessage(
      parse(`[${chain}, ${call(1, "eth_subscribe", ["newHeads"])},${call(2, "eth_blockNumber")}]`),
    );
    expect(plan).toMatchObject({
      kind: "split",
      batch: true,
      pipelineBody: `[${chain},${call(2, "eth_blockNumber")}]`,
    });
  });
});

describe("putting the answer together", () => {
  const split = (body: string) => {
    const plan = planMessage(parse(body));
    if (plan.kind !== "split") throw new Error("expected a split plan");
    return plan;
  };

  it("answers in the caller's order, notifications left out, invalid members answered in place", () => {
    const plan = split(
      `[${call(1, "eth_chainId")},${call(2, "eth_subscribe", ["newHeads"])},${call(undefined, "eth_blockNumber")},5,${call(3, "eth_unsubscribe", ["0x1"])},${call(4, "net_version")}]`,
    );
    const registry = new Map([
      [1, ok(2, "0xsub")],
      [4, ok(3, true)],
    ]);
    const answer = JSON.parse(assembleAnswer(plan, registry, `[${ok(1, "0x1")},${ok(4, "1")}]`));
    expect(answer.map((entry: { id: unknown }) => entry.id)).toEqual([1, 2, null, 3, 4]);
    expect(answer[2].error).toMatchObject({ code: -32600 });
  });

  it("a lone subscribe's answer is the registry's; a notification's is nothing", () => {
    expect(
      assembleAnswer(
        split(call(9, "eth_subscribe", ["newHeads"])),
        new Map([[0, ok(9, "0xs")]]),
        "",
      ),
    ).toBe(ok(9, "0xs"));
    expect(
      assembleAnswer(split(call(undefined, "eth_unsubscribe", ["0x1"])), new Map([[0, null]]), ""),
    ).toBe("");
    expect(
      assembleAnswer(
        split(`[${call(undefined, "eth_unsubscribe", ["0x1"])}]`),
        new Map([[0, null]]),
        "",
      ),
    ).toBe("");
  });

  it("a pipeline answer that does not match its calls is passed on whole, never matched wrongly", () => {
    const plan = split(`[${call(1, "eth_chainId")},${call(2, "eth_subscribe", ["newHeads"])}]`);
    const odd = '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}}';
    const answer = JSON.parse(assembleAnswer(plan, new Map([[1, ok(2, "0xs")]]), odd));
    expect(answer).toEqual([JSON.parse(ok(2, "0xs")), JSON.parse(odd)]);
  });
});

describe("the message bound", () => {
  it("an answer within 128 KB goes back as it is", () => {
    const body = ok(1, "a".repeat(WEBSOCKET_MESSAGE_BYTES - 40));
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(WEBSOCKET_MESSAGE_BYTES);
    expect(withinMessageLimit(body, parse(call(1, "eth_call")))).toBe(body);
  });

  it.each([
    ["one call: its id", call(5, "eth_getBlockByNumber"), [5]],
    [
      "a batch: each call's id, notifications left out",
      `[${call(1, "eth_call")},${call(undefined, "eth_call")},${call("x", "eth_call")}]`,
      [1, "x"],
    ],
  ])("an answer over it is the gateway's error naming the limit, %s", (_name, body, ids) => {
    const answer = withinMessageLimit(ok(1, "é".repeat(WEBSOCKET_MESSAGE_BYTES / 2)), parse(body));
    const parsed = [JSON.parse(answer)].flat();
    expect(parsed.map((entry: { id: unknown }) => entry.id)).toEqual(ids);
    for (const entry of parsed) {
      expect(entry.error.code).toBe(-32603);
      expect(entry.error.message).toMatch(
        /over the 131072 bytes \(128 KB\) one WebSocket message carries/,
      );
    }
  });

  it("regression: a batch over it lost its registry answers too, leaving a subscription whose id the client never learnt; now only the pipeline's calls get the error", () => {
    const plan = planMessage(
      parse(
        `[${call(1, "eth_getBlockByNumber")},${call(2, "eth_subscribe", ["newHeads"])},${call(3, "eth_getBlockByNumber")}]`,
      ),
    );
    if (plan.kind !== "split") throw new Error("expected a split plan");
    const subscribed = ok(2, `0x${"5".repeat(32)}`);
    const big = ok(1, "b".repeat(WEBSOCKET_MESSAGE_BYTES / 2));
    const answer = JSON.parse(
      assembleWithinLimit(
        plan,
        new Map([[1, subscribed]]),
        `[${big},${big.replace('"id":1', '"id":3')}]`,
      ),
    );
    expect(answer).toEqual([
      {
        jsonrpc: "2.0",
        id: 1,
        error: { code: -32603, message: expect.stringContaining("128 KB") },
      },
      JSON.parse(subscribed),
      {
        jsonrpc: "2.0",
        id: 3,
        error: { code: -32603, message: expect.stringContaining("128 KB") },
      },
    ]);
    const small = assembleWithinLimit(
      plan,
      new Map([[1, subscribed]]),
      `[${ok(1, "0x")},${ok(3, "0x")}]`,
    );
    expect(small).toBe(
      assembleAnswer(plan, new Map([[1, subscribed]]), `[${ok(1, "0x")},${ok(3, "0x")}]`),
    );
  });

  it("when even the errors would not fit, one error without an id", () => {
    const many = `[${Array.from({ length: 2000 }, (_, id) => call(`${"i".repeat(60)}${id}`, "eth_call")).join(",")}]`;
    const request = parseRequest(many, { maxBodyBytes: 10_000_000, maxBatch: 10_000 });
    const answer = withinMessageLimit("x".repeat(WEBSOCKET_MESSAGE_BYTES + 1), request);
    expect(JSON.parse(answer)).toMatchObject({ id: null, error: { code: -32603 } });
  });
});

describe("refusing every call of a message", () => {
  it.each([
    [
      "one call",
      call(3, "eth_call"),
      '{"jsonrpc":"2.0","id":3,"error":{"code":-32005,"message":"no"}}',
    ],
    ["a notification: nothing", call(undefined, "eth_call"), ""],
    ["a batch of notifications: nothing", `[${call(undefined, "eth_call")}]`, ""],
    [
      "unparsable: one error",
      "{",
      '{"jsonrpc":"2.0","id":null,"error":{"code":-32005,"message":"no"}}',
    ],
  ])("%s", (_name, body, expected) => {
    expect(errorForEveryCall(parse(body), -32005, "no")).toBe(expected);
  });
});
