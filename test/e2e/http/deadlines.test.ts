import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../../local/anvil.ts";
import { type FaultShim, startFaultShim } from "../../../local/fault-shim.ts";
import { type LocalStack, startLocalStack } from "../../../local/stack.ts";
import { rpcEvent } from "../../support/api-gateway-event.ts";

/**
 * The whole request has a deadline: `request_deadline_ms`, and never later than one second
 * before the Lambda's remaining time runs out. Providers that hang are given no more than
 * that, whatever `request_timeout_ms` allows, and the caller gets the gateway's own error.
 * On `deadline` two providers hang: the first attempt's 400 ms timeout fits the 500 ms
 * deadline, the second is cut to what is left. On `lambda` the attempt timeout (20 s) is far
 * above the Lambda's 0.6 s, so that bound cannot be met by the attempt timeout.
 */

const REQUEST_TIMEOUT_MS = 20_000;
/** Well under the attempt timeout, well over either deadline: room for a loaded machine. */
const ANSWER_BOUND_MS = 8_000;

let node: AnvilNode;
let hangingForDeadline: FaultShim;
let hangingAlsoForDeadline: FaultShim;
let hangingForLambda: FaultShim;
let stack: LocalStack;

beforeAll(async () => {
  node = await startAnvil({ chainId: 31337 });
  [hangingForDeadline, hangingAlsoForDeadline, hangingForLambda] = await Promise.all([
    startFaultShim(node.url),
    startFaultShim(node.url),
    startFaultShim(node.url),
  ]);
  await Promise.all([
    hangingForDeadline.setFault({ kind: "hang" }),
    hangingAlsoForDeadline.setFault({ kind: "hang" }),
    hangingForLambda.setFault({ kind: "hang" }),
  ]);
  stack = await startLocalStack({
    config: {
      request_timeout_ms: REQUEST_TIMEOUT_MS,
      networks: {
        deadline: {
          chain_id: 31337,
          request_timeout_ms: 400,
          request_deadline_ms: 500,
          providers: [
            { name: "hanging", url: hangingForDeadline.url, priority: 2 },
            { name: "hanging-too", url: hangingAlsoForDeadline.url },
          ],
        },
        lambda: {
          chain_id: 31337,
          providers: [{ name: "hanging", url: hangingForLambda.url }],
        },
      },
    },
  });
}, 60_000);

afterAll(async () => {
  await stack?.close();
  await Promise.all([
    hangingForDeadline?.close(),
    hangingAlsoForDeadline?.close(),
    hangingForLambda?.close(),
  ]);
  await node?.stop();
});

function expectTimedOut(status: number | undefined, body: string | undefined): void {
  expect(status).toBe(502);
  const answer = JSON.parse(body ?? "") as {
    id: unknown;
    error: { code: number; message: string };
  };
  expect(answer).toMatchObject({ id: 7, error: { code: -32603 } });
  expect(answer.error.message).toMatch(/timeout|timed out/i);
}

const CALL = '{"jsonrpc":"2.0","id":7,"method":"eth_blockNumber","params":[]}';

describe("deadlines", () => {
  it("request_deadline_ms (500 ms) cuts the second hanging attempt short: 502 -32603", async () => {
    const started = performance.now();
    const response = await fetch(`${stack.url}/deadline`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: CALL,
    });
    const body = await response.text();
    const elapsed = performance.now() - started;
    expectTimedOut(response.status, body);
    expect(response.headers.get("x-gateway-attempts")).toBe("2");
    expect(elapsed).toBeGreaterThanOrEqual(450);
    expect(elapsed).toBeLessThan(ANSWER_BOUND_MS);
  });

  it("the Lambda's remaining time (1.6 s, so 0.6 s of work) bounds the request below request_deadline_ms (25 s)", async () => {
    const started = performance.now();
    const result = await stack.runtime.handle(rpcEvent(CALL, "lambda"), 1_600);
    const elapsed = performance.now() - started;
    expectTimedOut(result.statusCode, result.body);
    expect(elapsed).toBeGreaterThanOrEqual(550);
    expect(elapsed).toBeLessThan(ANSWER_BOUND_MS);
  });
});
