import { describe, expect, it } from "vitest";
import { computedFromCaller } from "../../../../functions/core/request/cache/callers-answer.ts";

/** Which answers are the caller's own computation, never shared (docs/behaviour.md §11.3). */

const TO = "0x00000000000000000000000000000000000c0de0";
const TX = { to: TO, data: "0x01" };
const HASH = `0x${"ab".repeat(32)}`;
const OVERRIDE = { [TO]: { code: "0x6000" } };
const JS_TRACER = "{data: [], fault: function() {}, result: function() { return this.data; }}";

describe("computedFromCaller", () => {
  it.each<[string, string, unknown, boolean]>([
    ["eth_call, plain", "eth_call", [TX, "0x1"], false],
    ["eth_call, state override", "eth_call", [TX, "0x1", OVERRIDE], true],
    ["eth_call, empty state override", "eth_call", [TX, "0x1", {}], false],
    ["eth_call, null state override", "eth_call", [TX, "0x1", null], false],
    ["eth_call, block override", "eth_call", [TX, "0x1", null, { time: "0x1" }], true],
    ["eth_call, no to: creation code", "eth_call", [{ data: "0x6001" }, "0x1"], true],
    ["eth_call, to null", "eth_call", [{ to: null, data: "0x6001" }, "0x1"], true],
    ["eth_estimateGas, state override", "eth_estimateGas", [TX, "0x1", OVERRIDE], true],
    ["eth_estimateGas, plain", "eth_estimateGas", [TX, "0x1"], false],
    [
      "eth_createAccessList, block override",
      "eth_createAccessList",
      [TX, "0x1", {}, { number: "0x2" }],
      true,
    ],
    ["eth_simulateV1, always", "eth_simulateV1", [{ blockStateCalls: [] }, "0x1"], true],
    [
      "debug_traceCall, built-in tracer",
      "debug_traceCall",
      [TX, "0x1", { tracer: "callTracer" }],
      false,
    ],
    ["debug_traceCall, JS tracer", "debug_traceCall", [TX, "0x1", { tracer: JS_TRACER }], true],
    [
      "debug_traceCall, stateOverrides",
      "debug_traceCall",
      [TX, "0x1", { stateOverrides: OVERRIDE }],
      true,
    ],
    [
      "debug_traceCall, blockOverrides",
      "debug_traceCall",
      [TX, "0x1", { blockOverrides: { number: "0x9" } }],
      true,
    ],
    ["debug_traceCall, creation code", "debug_traceCall", [{ data: "0x60" }, "0x1"], true],
    ["debug_traceTransaction, struct logs", "debug_traceTransaction", [HASH], false],
    [
      "debug_traceTransaction, prestateTracer",
      "debug_traceTransaction",
      [HASH, { tracer: "prestateTracer", tracerConfig: { diffMode: true } }],
      false,
    ],
    [
      "debug_traceTransaction, JS tracer",
      "debug_traceTransaction",
      [HASH, { tracer: JS_TRACER }],
      true,
    ],
    [
      "debug_traceBlockByNumber, JS tracer",
      "debug_traceBlockByNumber",
      ["0x1", { tracer: JS_TRACER }],
      true,
    ],
    [
      "debug_traceBlockByHash, tracer not a string",
      "debug_traceBlockByHash",
      [HASH, { tracer: 7 }],
      true,
    ],
    ["trace_call, plain", "trace_call", [TX, ["trace"], "0x1"], false],
    ["trace_call, state overrides (reth)", "trace_call", [TX, ["trace"], "0x1", OVERRIDE], true],
    [
      "trace_callMany, one creation",
      "trace_callMany",
      [
        [
          [TX, ["trace"]],
          [{ data: "0x60" }, ["trace"]],
        ],
        "0x1",
      ],
      true,
    ],
    ["trace_callMany, plain", "trace_callMany", [[[TX, ["trace"]]], "0x1"], false],
    ["eth_getBalance", "eth_getBalance", [TO, "0x1"], false],
    ["eth_call, params an object", "eth_call", { tx: TX }, false],
    ["eth_call, no params", "eth_call", undefined, false],
  ])("%s", (_name, method, params, expected) => {
    expect(computedFromCaller(method, params)).toBe(expected);
  });
});
