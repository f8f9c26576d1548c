import { execFileSync } from "node:child_process";
import type { APIGatewayProxyStructuredResultV2, Context } from "aws-lambda";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { FlushableTelemetry } from "../../functions/adapters/telemetry.ts";
import { EarlyTimeouts } from "../../functions/proxy/early-timeout.ts";
import { createProxyHandler } from "../../functions/proxy/lambda.ts";
import type { ProxyRuntime } from "../../functions/proxy/runtime.ts";
import { rpcEvent } from "../support/api-gateway-event.ts";

/**
 * The proxy gives up 5 ms before Lambda's deadline, so its own JSON-RPC error answers rather
 * than API Gateway's bare 500; one timer serves every invocation in flight.
 */

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance", "Date"] });
});
afterEach(() => {
  vi.useRealTimers();
});

const never = <T>() => new Promise<T>(() => undefined);

function settled<T>(promise: Promise<T>): { outcome: () => string } {
  let outcome = "pending";
  promise.then(
    (value) => {
      outcome = `value ${String(value)}`;
    },
    (error: Error) => {
      outcome = `${error.name}: ${error.message}`;
    },
  );
  return { outcome: () => outcome };
}

describe("early timeouts", () => {
  it("fails the work 5 ms before the remaining time runs out, not a moment sooner", async () => {
    const timeouts = new EarlyTimeouts();
    const raced = settled(timeouts.race(never(), 1000));
    await vi.advanceTimersByTimeAsync(994);
    expect(raced.outcome()).toBe("pending");
    await vi.advanceTimersByTimeAsync(1);
    expect(raced.outcome()).toBe("TimeoutError: [AbortError]: The operation was aborted.");
  });

  it("passes on the work's value or error when it settles in time", async () => {
    const timeouts = new EarlyTimeouts();
    const value = settled(timeouts.race(Promise.resolve(7), 1000));
    const error = settled(timeouts.race(Promise.reject(new RangeError("boom")), 1000));
    await vi.advanceTimersByTimeAsync(5000);
    expect(value.outcome()).toBe("value 7");
    expect(error.outcome()).toBe("RangeError: boom");
  });

  it("times each invocation from its own start and remaining time, in whatever order they come", async () => {
    const timeouts = new EarlyTimeouts();
    const long = settled(timeouts.race(never(), 3005));
    await vi.advanceTimersByTimeAsync(100);
    const short = settled(timeouts.race(never(), 1005));
    let finish: (value: string) => void = () => undefined;
    const finished = settled(
      timeouts.race(
        new Promise<string>((resolve) => {
          finish = resolve;
        }),
        505,
      ),
    );
    await vi.advanceTimersByTimeAsync(499);
    finish("done");
    await vi.advanceTimersByTimeAsync(0);
    expect(finished.outcome()).toBe("value done");
    await vi.advanceTimersByTimeAsync(500);
    expect(short.outcome()).toBe("pending");
    await vi.advanceTimersByTimeAsync(1);
    expect([short.outcome(), long.outcome()]).toEqual([
      "TimeoutError: [AbortError]: The operation was aborted.",
      "pending",
    ]);
    await vi.advanceTimersByTimeAsync(1899);
    expect(long.outcome()).toBe("pending");
    await vi.advanceTimersByTimeAsync(1);
    expect(long.outcome()).toBe("TimeoutError: [AbortError]: The operation was aborted.");
  });

  it("gives up at once with less than 5 ms left", async () => {
    const timeouts = new EarlyTimeouts();
    const raced = settled(timeouts.race(never(), 3));
    await vi.advanceTimersByTimeAsync(0);
    expect(raced.outcome()).toBe("TimeoutError: [AbortError]: The operation was aborted.");
  });
});

describe("the proxy handler at its deadline", () => {
  it("answers a JSON-RPC 500 with the caller's id 5 ms before the deadline when the gateway hangs, and logs why", async () => {
    const errors: string[] = [];
    const runtime = {
      telemetry: {
        log: (level: string, _message: string, fields: Record<string, unknown> = {}) => {
          if (level === "error") errors.push(String(fields.error));
        },
      } as unknown as FlushableTelemetry,
      corsOrigins: () => ["*"],
      flushIfDue: async () => undefined,
      handle: () => never<APIGatewayProxyStructuredResultV2>(),
    } as unknown as ProxyRuntime;
    const handler = createProxyHandler(runtime);
    const deadline = Date.now() + 2000;
    const context = {
      getRemainingTimeInMillis: () => deadline - Date.now(),
    } as unknown as Context;
    let result: APIGatewayProxyStructuredResultV2 | undefined;
    void handler(
      rpcEvent('{"jsonrpc":"2.0","id":42,"method":"eth_blockNumber","params":[]}'),
      context,
    ).then((value) => {
      result = value;
    });
    await vi.advanceTimersByTimeAsync(1994);
    expect(result).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(result?.statusCode).toBe(500);
    expect(result?.body).toBe(
      '{"jsonrpc":"2.0","id":42,"error":{"code":-32603,"message":"internal gateway error"}}',
    );
    expect(result?.headers?.["access-control-allow-origin"]).toBe("*");
    expect(errors).toEqual(["[AbortError]: The operation was aborted."]);
  });
});

describe("the timer and the process", () => {
  const script = (work: string, remainingMs: number) => `
    import { EarlyTimeouts } from ${JSON.stringify(new URL("../../functions/proxy/early-timeout.ts", import.meta.url).pathname)};
    const started = performance.now();
    const outcome = await new EarlyTimeouts().race(${work}, ${remainingMs}).then(String, (error) => error.name);
    console.log(outcome, Math.round(performance.now() - started));
  `;
  const run = (source: string) =>
    execFileSync(process.execPath, ["--input-type=module", "-e", source], {
      encoding: "utf8",
      timeout: 20_000,
    }).trim();

  it("holds the process open for a hung invocation until its early timeout, with nothing else keeping it alive", () => {
    vi.useRealTimers();
    const [outcome, elapsedMs] = run(script("new Promise(() => {})", 205)).split(" ");
    expect(outcome).toBe("TimeoutError");
    expect(Number(elapsedMs)).toBeGreaterThanOrEqual(199);
  });

  it("lets an idle process exit: an invocation that ended in time leaves no timer holding it", () => {
    vi.useRealTimers();
    const started = performance.now();
    expect(run(script("Promise.resolve('done')", 60_000)).split(" ")[0]).toBe("done");
    expect(performance.now() - started).toBeLessThan(15_000);
  });
});
