import { RpcClient } from "@subsquid/rpc-client";
import { createPublicClient, http } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ProvokedError, provokeGatewayErrors } from "../../support/gateway-error-catalogue.ts";
import { type ReplayServer, startReplayServer } from "../../support/replay-server.ts";

/**
 * The gateway's own errors keep the shapes indexers' retry helpers already recognise (issue
 * 25; docs/behaviour.md §2, §8, §12.8): every kind of error answer it gives, provoked for real
 * (gateway-error-catalogue.ts), is handed as it was to the real classifiers of viem (its http
 * transport's retry rule) and of subsquid (`@subsquid/rpc-client`'s `isConnectionError`, and
 * `@subsquid/evm-processor`'s narrowing of an `eth_getLogs` range), each allowed one retry, and
 * what they do is held against what the table says each should be:
 * - `retryable`: the same call may succeed later (the providers, the gateway or a limit
 *   recover): both clients try again;
 * - `fatal`: the caller must change the call: neither tries it again unchanged;
 * - `narrow`: a log range too big to answer: subsquid's processor narrows the range (viem's
 *   watchers halve any failing range by themselves).
 * A range past the head is -32602 (as execution-apis specifies for eth_getLogs); missing data
 * and "all providers failed" are retryable, never "method not found".
 */

type Should = "retryable" | "fatal" | "narrow";

const TABLE: Readonly<
  Record<string, { readonly code: number | "an error" | null; readonly should: Should }>
> = {
  "parse error": { code: -32700, should: "fatal" },
  "invalid request": { code: -32600, should: "fatal" },
  "body over max_body_bytes": { code: -32600, should: "fatal" },
  "batch over max_batch": { code: -32600, should: "fatal" },
  "unknown network": { code: -32600, should: "fatal" },
  "no API key": { code: -32001, should: "fatal" },
  "API key over requests_per_minute": { code: -32005, should: "retryable" },
  "method denied by the gateway": { code: -32601, should: "fatal" },
  "method no provider serves": { code: -32601, should: "fatal" },
  "transaction signed for another chain": { code: -32602, should: "fatal" },
  "no provider in service (a secret did not resolve)": { code: -32603, should: "retryable" },
  "all providers failed": { code: -32603, should: "retryable" },
  "all providers failed for one call of a batch": { code: -32603, should: "retryable" },
  "request deadline passed": { code: -32603, should: "retryable" },
  "max_upstream_calls reached on retries of failing providers": {
    code: -32603,
    should: "retryable",
  },
  "eth_getLogs toBlock that is no block number": { code: -32602, should: "fatal" },
  "eth_getLogs toBlock above the chain head": { code: -32602, should: "fatal" },
  "eth_getLogs needing more pieces than max_upstream_calls": { code: -32005, should: "narrow" },
  "eth_getLogs answer over max_response_bytes": { code: -32005, should: "narrow" },
  "eth_getLogs every provider answers without the logs (missing data)": {
    code: "an error",
    should: "retryable",
  },
  "state at a block no provider keeps": { code: -32000, should: "fatal" },
  "upstream answer over max_response_bytes": { code: -32003, should: "fatal" },
  "answer over Lambda's 6 MB": { code: -32003, should: "fatal" },
  "internal gateway error": { code: -32603, should: "retryable" },
  // API Gateway's own answers ({"message": …}), in front of the function.
  "API Gateway integration timeout": { code: null, should: "retryable" },
  "Lambda function timeout": { code: null, should: "retryable" },
};

/**
 * Where today's shape is not what the table says, by row and client, and why. Each is
 * `it.fails` until the owner of that answer fixes it, so the suite stays green and the case
 * turns red (to be made `it` again) once the shape is right.
 */
const WRONG_TODAY: ReadonlyMap<string, string> = new Map([
  // subsquid fails a whole batch on any member's error its text does not mark as passing, and
  // retries only an HTTP 429/502/503/504. The batch's other calls were answered: a 502 for the
  // whole batch would fail them too for clients that take the status for every member
  // (ethers' batching rejects every call of a non-2xx answer) and make viem ask them all again,
  // resends included. Kept as the batch's answer, 200, each call with its own outcome.
  ["all providers failed for one call of a batch / subsquid", "HTTP 200, a member's -32603"],
]);

/**
 * A client's own rule no shape of the gateway's can change, asserted as it is so a change of
 * the client shows: API Gateway answers a function that timed out with its own 500, which
 * subsquid does not retry. The gateway keeps it from arising: its request deadline (25 s) ends
 * before the function's timeout (29 s).
 */
const CLIENT_RULES: ReadonlyMap<string, boolean> = new Map([
  ["Lambda function timeout / subsquid", false],
]);

let provoked: Map<string, ProvokedError>;
let replay: ReplayServer;
let next = 0;

beforeAll(async () => {
  [provoked, replay] = await Promise.all([provokeGatewayErrors(), startReplayServer()]);
}, 60_000);

afterAll(async () => {
  await replay?.close();
});

const rowOf = (name: string) => {
  const row = provoked.get(name);
  if (row === undefined) throw new Error(`"${name}" was not provoked`);
  return row;
};

/** A fresh replay of `name`'s answer, under a name of its own (requests are counted per name). */
function replayOf(
  name: string,
  thenAnswer?: unknown,
): { url: string; requests: () => readonly string[] } {
  const row = rowOf(name);
  const path = `case-${next++}`;
  replay.record(
    path,
    {
      status: row.status,
      body: row.body,
      ...(row.contentType ? { contentType: row.contentType } : {}),
    },
    thenAnswer,
  );
  return { url: `${replay.url}/${path}`, requests: () => replay.requests(path) };
}

async function viemRetries(name: string): Promise<boolean> {
  const { calls } = rowOf(name);
  const target = replayOf(name);
  const client = createPublicClient({
    transport: http(target.url, { batch: calls.length > 1, retryCount: 1, retryDelay: 0 }),
  });
  await Promise.allSettled(
    calls.map((call) => client.request({ method: call.method, params: call.params } as never)),
  );
  return target.requests().length > 1;
}

async function subsquidRetries(name: string): Promise<boolean> {
  const { calls } = rowOf(name);
  const target = replayOf(name);
  const client = new RpcClient({
    url: target.url,
    retryAttempts: 1,
    retrySchedule: [0],
    requestTimeout: 5000,
  });
  try {
    const [only] = calls;
    if (calls.length === 1 && only !== undefined)
      await client.call(only.method, only.params).catch(() => undefined);
    else await client.batchCall([...calls]).catch(() => undefined);
  } finally {
    client.close();
  }
  return target.requests().length > 1;
}

/** Whether subsquid's processor, fetching the range's logs, asks again for a narrower range. */
async function subsquidNarrows(name: string): Promise<boolean> {
  const { Rpc } = await import("@subsquid/evm-processor/lib/ds-rpc/rpc.js");
  const filter = (rowOf(name).calls[0]?.params[0] ?? {}) as { fromBlock: string; toBlock: string };
  const target = replayOf(name, []);
  const client = new RpcClient({ url: target.url, retryAttempts: 0, requestTimeout: 5000 });
  try {
    await new Rpc(client)
      .getLogs(Number(filter.fromBlock), Number(filter.toBlock))
      .catch(() => undefined);
  } finally {
    client.close();
  }
  const spans = target.requests().map((body) => {
    const { params } = JSON.parse(body) as {
      params: Array<{ fromBlock: string; toBlock: string }>;
    };
    return Number(params[0]?.toBlock) - Number(params[0]?.fromBlock);
  });
  return spans.length > 1 && spans.slice(1).every((span) => span < (spans[0] ?? 0));
}

const caseIt = (name: string, client: string) =>
  WRONG_TODAY.has(`${name} / ${client}`) ? it.fails : it;
const retriedAs = (name: string, client: string, should: Should) =>
  CLIENT_RULES.get(`${name} / ${client}`) ?? should === "retryable";

describe("the classifiers, on shapes they are known to recognise (so each check can pass)", () => {
  it("subsquid narrows a range on Infura's too-many-results refusal; both clients retry a 503 page", async () => {
    provoked.set("control: Infura's refusal", {
      status: 200,
      body: '{"jsonrpc":"2.0","id":7,"error":{"code":-32005,"message":"query returned more than 10000 results. Try with this block range [0x0, 0x9]."}}',
      calls: [{ method: "eth_getLogs", params: [{ fromBlock: "0x0", toBlock: "0x28" }] }],
    });
    provoked.set("control: a 503 page", {
      status: 503,
      body: "<html><body>Service Temporarily Unavailable</body></html>",
      contentType: "text/html",
      calls: [{ method: "eth_chainId", params: [] }],
    });
    try {
      expect(await subsquidNarrows("control: Infura's refusal")).toBe(true);
      expect([
        await viemRetries("control: a 503 page"),
        await subsquidRetries("control: a 503 page"),
      ]).toEqual([true, true]);
    } finally {
      provoked.delete("control: Infura's refusal");
      provoked.delete("control: a 503 page");
    }
  });
});

describe("the gateway's error answers, as indexers' retry helpers classify them", () => {
  it("every row of the table was provoked, and nothing the gateway answered is missing from it", () => {
    expect([...provoked.keys()].sort()).toEqual(Object.keys(TABLE).sort());
  });

  for (const [name, { code, should }] of Object.entries(TABLE)) {
    describe(name, () => {
      caseIt(name, "shape")(
        `is ${code === null ? "API Gateway's own answer" : code === "an error" ? "an error, not method-not-found" : `JSON-RPC ${code}`}`,
        () => {
          const row = rowOf(name);
          const answer = JSON.parse(row.body) as unknown;
          const members = (Array.isArray(answer) ? answer : [answer]) as Array<{
            error?: { code?: number };
            message?: string;
          }>;
          if (code === null) {
            expect(answer).toMatchObject({ message: expect.any(String) });
            return;
          }
          const errors = members
            .filter((member) => member.error !== undefined)
            .map((member) => member.error?.code);
          if (code === "an error") {
            expect(errors.length).toBeGreaterThan(0);
            expect(errors).not.toContain(-32601);
          } else {
            expect(errors).toContain(code);
          }
        },
      );

      if (should === "narrow") {
        caseIt(name, "subsquid")("subsquid's processor narrows the range", async () => {
          expect(await subsquidNarrows(name)).toBe(true);
        });
      } else {
        caseIt(name, "viem")(
          `viem ${should === "retryable" ? "retries it" : "does not retry it"}`,
          async () => {
            expect(await viemRetries(name)).toBe(retriedAs(name, "viem", should));
          },
        );
        caseIt(name, "subsquid")(
          `subsquid ${should === "retryable" ? "retries it" : "does not retry it"}`,
          async () => {
            expect(await subsquidRetries(name)).toBe(retriedAs(name, "subsquid", should));
          },
        );
      }
    });
  }
});
