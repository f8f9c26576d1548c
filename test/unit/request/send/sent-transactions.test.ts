import { keccak256 } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { configSchema } from "../../../../functions/core/config/config-schema.ts";
import { buildModel } from "../../../../functions/core/config/network-model.ts";
import type { Call } from "../../../../functions/core/jsonrpc/jsonrpc.ts";
import type {
  Telemetry,
  TransactionLedger,
  UpstreamRequest,
  UpstreamResult,
} from "../../../../functions/core/ports.ts";
import { openCall } from "../../../../functions/core/request/open-call.ts";
import { startSends } from "../../../../functions/core/request/send/broadcast.ts";
import {
  providerKnowsTransaction,
  settleSentTransactions,
  wrongChainAnswer,
} from "../../../../functions/core/request/send/sent-transactions.ts";
import type { OpenCall } from "../../../../functions/core/request/vocabulary.ts";
import { GuardCounts } from "../../../../functions/core/status/guards.ts";
import { MemoryTransactionLedger } from "../../../support/memory-ledger.ts";

/**
 * A transaction is sent once and never reported failed (docs/behaviour.md §4.12): the chain
 * it is signed for, "already known" and "nonce too low" settled by asking providers for the
 * hash, the ledger's claim and outcome, the copies to other providers and what they bring
 * back. The pipeline around it is in request-pipeline.test.ts.
 */

// anvil's first default account: a well-known test key, never a real one.
const account = privateKeyToAccount(
  "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
);
const raw = await account.signTransaction({
  chainId: 31337,
  nonce: 1,
  to: "0x70997970c51812dc3a010c7d01b50e677d4c79c8",
  value: 1n,
  gas: 21000n,
  gasPrice: 1n,
});
const HASH = keccak256(raw);

const providers =
  buildModel(
    configSchema.parse({
      networks: {
        net: {
          chain_id: 31337,
          providers: ["p1", "p2", "p3", "p4"].map((name) => ({
            name,
            url: `http://${name}.test/`,
          })),
        },
      },
    }),
    (url) => url,
  ).networks.get("net")?.providers ?? [];

function call(method: string, params: unknown[], rawId: string | null = "7"): Call {
  return {
    position: 0,
    raw: JSON.stringify({ jsonrpc: "2.0", id: 7, method, params }),
    method,
    params,
    rawId,
  };
}

const send = (order = providers.map((provider) => ({ provider, emergency: false }))): OpenCall =>
  openCall(call("eth_sendRawTransaction", [raw]), order);

const error = (message: string) =>
  JSON.stringify({ jsonrpc: "2.0", id: 1, error: { code: -32000, message } });
const result = (value: unknown) => JSON.stringify({ jsonrpc: "2.0", id: 1, result: value });

/** An upstream answering each provider's URL with `answers[url]` (a result object by default). */
function upstream(answers: Record<string, UpstreamResult> = {}) {
  const requests: UpstreamRequest[] = [];
  return {
    requests,
    send: async (request: UpstreamRequest): Promise<UpstreamResult> => {
      requests.push(request);
      return (
        answers[request.url] ?? {
          ok: true,
          status: 200,
          body: result({ hash: HASH }),
          elapsedMs: 1,
        }
      );
    },
  };
}
const ok = (body: string, status = 200): UpstreamResult => ({
  ok: true,
  status,
  body,
  elapsedMs: 1,
});

describe("a transaction signed for another chain", () => {
  it("is the caller's error, with both chains named, in the caller's id", () => {
    expect(JSON.parse(wrongChainAnswer(call("eth_sendRawTransaction", [raw]), 1) ?? "")).toEqual({
      jsonrpc: "2.0",
      id: 7,
      error: {
        code: -32602,
        message:
          "invalid params: the transaction is signed for chain 31337, and this network is chain 1",
      },
    });
    const notification = wrongChainAnswer(call("eth_sendRawTransaction", [raw], null), 1);
    expect(JSON.parse(notification ?? "")).toMatchObject({ id: null });
  });

  it("only for eth_sendRawTransaction, and not on its own chain", () => {
    expect(wrongChainAnswer(call("eth_call", [raw]), 1)).toBeNull();
    expect(wrongChainAnswer(call("eth_sendRawTransaction", [raw]), 31337)).toBeNull();
  });
});

describe("settling a send the attempts left unclear", () => {
  it.each<[string, string | null, boolean, string | "unchanged"]>([
    ["already known: the hash", error("already known"), false, HASH],
    ["nonce too low, known by hash: the hash", error("nonce too low"), true, HASH],
    ["nonce too low, unknown: the error stands", error("nonce too low"), false, "unchanged"],
    ["no answer, known by hash: the hash", null, true, HASH],
    ["another error: it stands, nobody asked", error("insufficient funds"), true, "unchanged"],
  ])("%s", async (_name, answer, known, expected) => {
    const entry = send();
    entry.answer = answer;
    const asked: string[] = [];
    await settleSentTransactions([entry], async (_call, hash) => {
      asked.push(hash);
      return known;
    });
    expect(entry.answer === null ? null : (JSON.parse(entry.answer).result ?? "unchanged")).toBe(
      expected === "unchanged" ? (answer === null ? null : "unchanged") : expected,
    );
    expect(asked).toEqual(answer === null || answer.includes("nonce") ? [HASH] : []);
  });

  it("a kept upstream error counts as the answer; other methods are left alone", async () => {
    const entry = send();
    entry.fallback = { text: error("already known"), provider: "p1" };
    const other = openCall(call("eth_call", [raw]), []);
    other.answer = error("already known");
    await settleSentTransactions([entry, other], async () => true);
    expect(JSON.parse(entry.answer ?? "")).toEqual({ jsonrpc: "2.0", id: null, result: HASH });
    expect(other.answer).toBe(error("already known"));
  });
});

describe("asking providers whether they hold a transaction", () => {
  const limits = { timeoutMs: 1500.7, maxResponseBytes: 1000 };

  it("asks the first two of the call's order at once, by hash, as an idempotent read", async () => {
    const up = upstream();
    expect(await providerKnowsTransaction(up, send(), HASH, limits)).toBe(true);
    expect(up.requests).toEqual(
      ["http://p1.test/", "http://p2.test/"].map((url) => ({
        url,
        body: `{"jsonrpc":"2.0","id":1,"method":"eth_getTransactionByHash","params":["${HASH}"]}`,
        timeoutMs: 1500,
        maxResponseBytes: 1000,
        idempotent: true,
      })),
    );
  });

  it("no time left: nobody is asked", async () => {
    const up = upstream();
    expect(await providerKnowsTransaction(up, send(), HASH, { ...limits, timeoutMs: 0 })).toBe(
      false,
    );
    expect(up.requests).toEqual([]);
  });

  it.each<[string, UpstreamResult, boolean]>([
    ["a transaction object", ok(result({ hash: HASH })), true],
    ["null: not held", ok(result(null)), false],
    ["a string is no transaction", ok(result(HASH)), false],
    ["not 200", ok(result({ hash: HASH }), 500), false],
    ["not JSON", ok("<html>"), false],
  ])("one of the two answers %s, the other null: %s", async (_name, answer, known) => {
    const up = upstream({ "http://p1.test/": ok(result(null)), "http://p2.test/": answer });
    expect(await providerKnowsTransaction(up, send(), HASH, limits)).toBe(known);
  });
});

describe("a send claimed in the ledger and copied to other providers", () => {
  const silent: Telemetry = {
    log: () => undefined,
    count: () => undefined,
    measure: () => undefined,
  };
  const settings = {
    request_timeout_ms: 4000,
    max_response_bytes: 1_000_000,
    broadcast_to: 2,
    max_upstream_calls: 50,
  };
  /** The copies' 50 ms delay passes at once; the 1 s bound on waiting for them, only on abort. */
  const wait = (ms: number, signal?: AbortSignal) =>
    new Promise<void>((resolve) => {
      if (ms < 1000 || signal?.aborted) resolve();
      else signal?.addEventListener("abort", () => resolve(), { once: true });
    });

  async function sendOnce(
    entry: OpenCall,
    options: {
      ledger?: TransactionLedger;
      answers?: Record<string, UpstreamResult>;
      attempt?: string | null;
      settings?: Partial<typeof settings>;
      logs?: string[];
    } = {},
  ) {
    const up = upstream(options.answers);
    const inFlight = await startSends([entry], "net", {
      upstream: up,
      wait,
      settings: { ...settings, ...options.settings },
      ...(options.ledger ? { ledger: options.ledger } : {}),
      clock: () => 1_000,
      telemetry: {
        ...silent,
        log: (_level, message, fields) =>
          options.logs?.push(`${message} ${JSON.stringify(fields)}`),
      },
      scrubAnswer: (text) => text.replaceAll("s3cr3t", "***"),
      guards: new GuardCounts(silent),
    });
    if (options.attempt !== undefined && entry.answer === null) entry.answer = options.attempt;
    await inFlight.settle(10_000);
    return { up, copies: inFlight.copies };
  }

  it("copies go to broadcast_to providers after the first, and an accepted outcome is kept", async () => {
    const ledger = new MemoryTransactionLedger();
    const entry = send();
    const { up, copies } = await sendOnce(entry, { ledger, attempt: result(HASH) });
    expect(copies).toBe(2);
    expect(up.requests.map((request) => [request.url, request.idempotent])).toEqual([
      ["http://p2.test/", true],
      ["http://p3.test/", true],
    ]);
    expect(JSON.parse(up.requests[0]?.body ?? "")).toMatchObject({
      id: 1,
      method: "eth_sendRawTransaction",
    });
    expect(ledger.entries.get(`net/${HASH}`)).toEqual({ status: "accepted" });
  });

  it("copies come out of max_upstream_calls, leaving one for the call's own attempt", async () => {
    const { copies } = await sendOnce(send(), { settings: { max_upstream_calls: 2 } });
    expect(copies).toBe(1);
  });

  it("emergency slots get no copy", async () => {
    const order = providers.map((provider, index) => ({ provider, emergency: index > 1 }));
    const { up } = await sendOnce(send(order));
    expect(up.requests.map((request) => request.url)).toEqual(["http://p2.test/"]);
  });

  it("accepted before: answered with its hash at once, and sent again to the first provider too", async () => {
    const ledger = new MemoryTransactionLedger();
    ledger.entries.set(`net/${HASH}`, { status: "accepted" });
    const entry = send();
    const { up } = await sendOnce(entry, { ledger });
    expect(JSON.parse(entry.answer ?? "")).toMatchObject({ result: HASH });
    expect(up.requests.map((request) => request.url)).toEqual([
      "http://p1.test/",
      "http://p2.test/",
      "http://p3.test/",
    ]);
    expect(ledger.entries.get(`net/${HASH}`)).toEqual({ status: "accepted" });
  });

  it("the attempts' error, but a copy accepted it: answered with the hash, recorded accepted", async () => {
    const ledger = new MemoryTransactionLedger();
    const entry = send();
    await sendOnce(entry, {
      ledger,
      attempt: error("i/o timeout"),
      answers: { "http://p2.test/": ok(error("already known")) },
    });
    expect(JSON.parse(entry.answer ?? "")).toEqual({ jsonrpc: "2.0", id: null, result: HASH });
    expect(ledger.entries.get(`net/${HASH}`)).toEqual({ status: "accepted" });
  });

  it.each<[string, UpstreamResult]>([
    ["another hash", ok(result("0x1234"))],
    ["an error", ok(error("insufficient funds"))],
    ["not 200", ok(result(HASH), 502)],
    ["not JSON", ok("<html>")],
  ])(
    "a copy answering %s accepts nothing: the refusal is recorded, scrubbed",
    async (_name, answer) => {
      const ledger = new MemoryTransactionLedger();
      const entry = send();
      const refusal = error("insufficient funds for https://rpc/s3cr3t");
      await sendOnce(entry, {
        ledger,
        attempt: refusal,
        answers: { "http://p2.test/": answer, "http://p3.test/": answer },
      });
      expect(entry.answer).toBe(refusal);
      expect(ledger.entries.get(`net/${HASH}`)).toEqual({
        status: "refused",
        answer: error("insufficient funds for https://rpc/***"),
      });
    },
  );

  it("refused before: sent again, the new outcome recorded", async () => {
    const ledger = new MemoryTransactionLedger();
    ledger.entries.set(`net/${HASH}`, { status: "refused", answer: error("insufficient funds") });
    await sendOnce(send(), { ledger, attempt: result(HASH) });
    expect(ledger.entries.get(`net/${HASH}`)).toEqual({ status: "accepted" });
  });

  it("another container is sending it: sent anyway, its outcome left to that container", async () => {
    const ledger = new MemoryTransactionLedger();
    ledger.entries.set(`net/${HASH}`, { status: "sending", at: 900 });
    const { up } = await sendOnce(send(), { ledger, attempt: result(HASH) });
    expect(up.requests).toHaveLength(2);
    expect(ledger.entries.get(`net/${HASH}`)).toEqual({ status: "sending", at: 900 });
  });

  it("a ledger that cannot be read: sent without it, warned, nothing recorded", async () => {
    const logs: string[] = [];
    const settled: string[] = [];
    const ledger: TransactionLedger = {
      claim: async () => {
        throw new Error("throttled");
      },
      settle: async (_network, hash) => {
        settled.push(hash);
      },
    };
    const { up } = await sendOnce(send(), { ledger, attempt: result(HASH), logs });
    expect(up.requests).toHaveLength(2);
    expect(logs).toEqual([
      'transaction ledger unreadable: sending without it {"network":"net","error":"throttled"}',
    ]);
    expect(settled).toEqual([]);
  });

  it("a ledger that cannot be written: warned, the answer unharmed", async () => {
    const logs: string[] = [];
    const ledger: TransactionLedger = {
      claim: async () => null,
      settle: async () => {
        throw new Error("throttled");
      },
    };
    const entry = send();
    await sendOnce(entry, { ledger, attempt: result(HASH), logs });
    expect(logs).toEqual(['transaction ledger not updated {"network":"net","error":"throttled"}']);
    expect(JSON.parse(entry.answer ?? "")).toMatchObject({ result: HASH });
  });

  it("no answer at all: nothing recorded yet", async () => {
    const ledger = new MemoryTransactionLedger();
    await sendOnce(send(), {
      ledger,
      answers: { "http://p2.test/": ok(result(null)), "http://p3.test/": ok(result(null)) },
    });
    expect(ledger.entries.get(`net/${HASH}`)).toEqual({ status: "sending", at: 1_000 });
  });

  it.each<[string, number, number]>([
    ["far off: at most 1 s", 60_000, 1000],
    ["300 ms off: 300 ms", 1_300, 300],
    ["past: not at all", 500, 0],
  ])(
    "copies that hang are waited for until the deadline, %s, then aborted",
    async (_name, deadline, waited) => {
      const waits: number[] = [];
      const signals: AbortSignal[] = [];
      const hanging = {
        send: (request: UpstreamRequest) =>
          new Promise<UpstreamResult>((resolve) => {
            if (request.signal) signals.push(request.signal);
            request.signal?.addEventListener("abort", () =>
              resolve({
                ok: false,
                failure: { kind: "connection", message: "aborted" },
                elapsedMs: 1,
              }),
            );
          }),
      };
      const entry = send();
      const inFlight = await startSends([entry], "net", {
        upstream: hanging,
        wait: async (ms: number) => {
          waits.push(ms);
        },
        settings,
        clock: () => 1_000,
        telemetry: silent,
        scrubAnswer: (text) => text,
        guards: new GuardCounts(silent),
      });
      entry.answer = result(HASH);
      await new Promise((resolve) => setImmediate(resolve));
      await inFlight.settle(deadline);
      expect(waits).toEqual([50, waited]);
      expect(signals.map((signal) => signal.aborted)).toEqual([true, true]);
    },
  );

  it("a send answered before the copies (signed for another chain) gets none", async () => {
    const entry = send();
    entry.answer = error("invalid params: the transaction is signed for chain 1");
    const { up, copies } = await sendOnce(entry);
    expect([copies, up.requests.length]).toEqual([0, 0]);
  });

  it("the attempts' own answer with the hash is kept as it is, whatever the copies got", async () => {
    const entry = send();
    const own = JSON.stringify({ jsonrpc: "2.0", id: 1, result: HASH });
    await sendOnce(entry, { attempt: own, answers: { "http://p2.test/": ok(result(HASH)) } });
    expect(entry.answer).toBe(own);
  });

  it("settled before the copies' delay ran out: none is sent, and no wait outlives the request", async () => {
    const waits: Array<{ ms: number; signal: AbortSignal | undefined }> = [];
    const up = upstream();
    const entry = send();
    const inFlight = await startSends([entry], "net", {
      upstream: up,
      // The deadline has come (a wait of 0 ends at once); the copies' delay ends on abort only.
      wait: (ms, signal) =>
        new Promise<void>((resolve) => {
          waits.push({ ms, signal });
          if (ms === 0) resolve();
          else signal?.addEventListener("abort", () => resolve(), { once: true });
        }),
      settings,
      clock: () => 1_000,
      telemetry: silent,
      scrubAnswer: (text) => text,
      guards: new GuardCounts(silent),
    });
    entry.answer = result(HASH);
    await inFlight.settle(1_000);
    await new Promise((resolve) => setImmediate(resolve));
    expect(up.requests).toEqual([]);
    expect(waits.map((wait) => [wait.ms, wait.signal?.aborted])).toEqual([
      [50, true],
      [0, true],
    ]);
  });

  it("with broadcast_to 0 nothing is copied and nothing waited for but the copies' bound", async () => {
    const waits: number[] = [];
    const entry = send();
    const inFlight = await startSends([entry], "net", {
      upstream: upstream(),
      wait: async (ms) => {
        waits.push(ms);
      },
      settings: { ...settings, broadcast_to: 0 },
      clock: () => 1_000,
      telemetry: silent,
      scrubAnswer: (text) => text,
      guards: new GuardCounts(silent),
    });
    await inFlight.settle(60_000);
    expect(waits).toEqual([1000]);
  });

  it("no send in the request: no copies, nothing claimed", async () => {
    const ledger = new MemoryTransactionLedger();
    const inFlight = await startSends([openCall(call("eth_call", [raw]), [])], "net", {
      upstream: upstream(),
      wait,
      settings,
      ledger,
      clock: () => 1_000,
      telemetry: silent,
      scrubAnswer: (text) => text,
      guards: new GuardCounts(silent),
    });
    expect(inFlight.copies).toBe(0);
    expect(ledger.entries.size).toBe(0);
    const waits: number[] = [];
    const none = await startSends([openCall(call("eth_call", [raw]), [])], "net", {
      upstream: upstream(),
      wait: async (ms) => {
        waits.push(ms);
      },
      settings,
      clock: () => 1_000,
      telemetry: silent,
      scrubAnswer: (text) => text,
      guards: new GuardCounts(silent),
    });
    await none.settle(60_000);
    expect(waits).toEqual([]);
  });
});
