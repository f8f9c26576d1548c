import { afterEach, describe, expect, it, vi } from "vitest";
import { createTelemetry } from "../../../functions/adapters/telemetry.ts";
import { makeScrubber } from "../../../functions/core/config/redact.ts";
import { captureOutput } from "../../support/capture-output.ts";
import { parseEmf } from "../../support/emf.ts";

function telemetryWithClock() {
  let now = 1_000;
  const lines: string[] = [];
  const telemetry = createTelemetry({
    serviceName: "test",
    namespace: "Test",
    scrub: (text) => text.replaceAll("secret", "***"),
    clock: () => now,
    flushIntervalMs: 5_000,
    write: (line) => lines.push(line),
  });
  return { telemetry, lines, advance: (ms: number) => (now += ms) };
}

describe("telemetry series", () => {
  it("adds the counts of equal dimensions into one series, a frozen object's too", () => {
    const { telemetry, lines } = telemetryWithClock();
    const frozen = Object.freeze({ network: "main" });
    telemetry.count("requests", frozen);
    telemetry.count("requests", { network: "main" });
    telemetry.count("requests", frozen, 3);
    telemetry.measure("latency_ms", frozen, 7, "Milliseconds");
    telemetry.measure("latency_ms", { network: "main" }, 9, "Milliseconds");
    telemetry.flush();
    const metrics = parseEmf(lines);
    expect(metrics.filter((m) => m.name === "requests")).toEqual([
      expect.objectContaining({
        dimensions: expect.objectContaining({ network: "main" }),
        values: [5],
      }),
    ]);
    expect(metrics.filter((m) => m.name === "latency_ms")).toEqual([
      expect.objectContaining({ unit: "Milliseconds", values: [7, 9] }),
    ]);
  });

  it("loses no count across a flush that falls due while counting", () => {
    const { telemetry, lines, advance } = telemetryWithClock();
    const frozen = Object.freeze({ network: "main" });
    telemetry.count("requests", frozen);
    advance(5_000);
    // Due: this count lands in the flushed batch, and the next ones in a new series.
    telemetry.count("requests", frozen);
    telemetry.count("requests", frozen);
    telemetry.count("requests", frozen);
    telemetry.flush();
    const totals = parseEmf(lines)
      .filter((m) => m.name === "requests")
      .flatMap((m) => m.values);
    expect(totals.reduce((sum, value) => sum + value, 0)).toBe(4);
    expect(totals).toHaveLength(2);
  });

  it("keeps series of different units apart under one name", () => {
    const { telemetry, lines } = telemetryWithClock();
    const frozen = Object.freeze({ network: "main" });
    telemetry.measure("wait", frozen, 2, "Milliseconds");
    telemetry.measure("wait", frozen, 3, "Seconds");
    telemetry.flush();
    const units = parseEmf(lines)
      .filter((m) => m.name === "wait")
      .map((m) => [m.unit, m.values]);
    expect(units).toEqual(
      expect.arrayContaining([
        ["Milliseconds", [2]],
        ["Seconds", [3]],
      ]),
    );
  });

  it("scrubs secrets out of dimension values", () => {
    const { telemetry, lines } = telemetryWithClock();
    telemetry.count("requests", Object.freeze({ network: "secret-net" }));
    telemetry.flush();
    expect(lines.join("\n")).not.toContain("secret");
    expect(parseEmf(lines)[0]?.dimensions).toMatchObject({ network: "***-net" });
  });
});

describe("telemetry series: one per name, unit and dimensions, sampled past 99 values", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("keeps dimension values apart, in the namespace, each line with its own dimensions", () => {
    const { telemetry, lines } = telemetryWithClock();
    telemetry.count("requests", { network: "a" });
    telemetry.count("requests", { network: "b" }, 2);
    telemetry.count("errors", { provider: "p1" });
    telemetry.flush();
    expect(
      parseEmf(lines).map((m) => [m.namespace, m.name, m.dimensions, m.values] as const),
    ).toEqual([
      ["Test", "requests", { service: "test", network: "a" }, [1]],
      ["Test", "requests", { service: "test", network: "b" }, [2]],
      ["Test", "errors", { service: "test", provider: "p1" }, [1]],
    ]);
  });

  // Math.random() mocked: measurement n > 99 replaces slot ⌊draw × n⌋ when that is under 99.
  it.each<[string, number, number, Record<number, number>]>([
    ["99 values: all kept, not sampled", 99, 0.5, { 0: 1, 50: 51, 98: 99 }],
    ["100 values: the 100th in slot 50", 100, 0.5, { 49: 50, 50: 100, 51: 52 }],
    ["150 values: slot k holds 2k + 1", 150, 0.5, { 49: 50, 50: 101, 75: 150, 76: 77 }],
    ["a draw past the last slot keeps the sample", 100, 0.999, { 0: 1, 98: 99 }],
  ])("%s", (_name, count, draw, slots) => {
    vi.spyOn(Math, "random").mockReturnValue(draw);
    const { telemetry, lines } = telemetryWithClock();
    for (let n = 1; n <= count; n++) {
      telemetry.measure("latency_ms", { network: "a" }, n, "Milliseconds");
    }
    telemetry.count("requests", { network: "a" });
    telemetry.flush();
    const [latency] = parseEmf(lines).filter((m) => m.name === "latency_ms");
    expect(latency?.values).toHaveLength(Math.min(count, 99));
    for (const [slot, value] of Object.entries(slots)) {
      expect(latency?.values[Number(slot)]).toBe(value);
    }
    const documents = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(documents.map((document) => document.sampled_from)).toEqual([
      count > 99 ? String(count) : undefined,
      undefined,
    ]);
  });

  it("writes EMF lines to stdout by default, when the interval passed or on flush", () => {
    let now = 50_000;
    const telemetry = createTelemetry({
      serviceName: "test",
      namespace: "Test",
      scrub: (text) => text,
      clock: () => now,
      flushIntervalMs: 1_000,
    });
    const output = captureOutput({ passThrough: false });
    try {
      telemetry.count("requests", { network: "a" });
      telemetry.flushIfDue();
      const early = output.lines().length;
      now = 50_999;
      telemetry.flushIfDue();
      const stillEarly = output.lines().length;
      now = 51_000;
      telemetry.flushIfDue();
      expect([early, stillEarly]).toEqual([0, 0]);
    } finally {
      output.restore();
    }
    expect(parseEmf(output.lines()).map((m) => [m.name, m.values])).toEqual([["requests", [1]]]);
  });
});

describe("telemetry log levels", () => {
  function logged(logLevel: string | undefined) {
    const telemetry = createTelemetry({
      serviceName: "test",
      namespace: "Test",
      scrub: (text) => text,
      write: () => {},
      ...(logLevel === undefined ? {} : { logLevel }),
    });
    const output = captureOutput({ passThrough: false });
    try {
      for (const level of ["debug", "info", "warn", "error"] as const) {
        telemetry.log(level, `a ${level} line`, { n: 1 });
      }
    } finally {
      output.restore();
    }
    const messages = output
      .lines()
      .map((line) => (JSON.parse(line) as { message: string }).message);
    const enabled = (["debug", "info", "warn", "error"] as const).filter((level) =>
      telemetry.enabled?.(level),
    );
    return { messages, enabled };
  }

  it.each<[string | undefined, string[]]>([
    ["DEBUG", ["debug", "info", "warn", "error"]],
    ["info", ["info", "warn", "error"]],
    ["WARN", ["warn", "error"]],
    ["error", ["error"]],
    // An unknown level is INFO's.
    ["chatty", ["info", "warn", "error"]],
  ])("at %s: %j", (level, expected) => {
    const { messages, enabled } = logged(level);
    expect(messages).toEqual(expected.map((name) => `a ${name} line`));
    expect(enabled).toEqual(expected);
  });
});

describe("telemetry log lines", () => {
  // A key from the secret store, with characters a URL carries percent-encoded.
  const SECRET = "s3cr3t/Key+With=Chars";
  const ENCODED = encodeURIComponent(SECRET);
  const RESOLVED = `https://rpc.test/v2/${ENCODED}`;

  it("scrubs a secret out of every log field, raw and percent-encoded, nested too (docs/behaviour.md §7.3)", () => {
    const telemetry = createTelemetry({
      serviceName: "test",
      namespace: "Test",
      scrub: makeScrubber([{ resolved: RESOLVED, redacted: "https://rpc.test/v2/***" }], [SECRET]),
      write: () => {},
    });
    const output = captureOutput({ passThrough: false });
    try {
      telemetry.log("error", "upstream failed", {
        error: `401: key ${SECRET} refused`,
        url: `https://other.test/rpc?key=${ENCODED}&chain=1`,
        attempts: [{ provider: "p1", last_error: `bad key ${ENCODED}` }],
        endpoint: RESOLVED,
      });
    } finally {
      output.restore();
    }
    const lines = output.lines().filter((line) => line.includes("upstream failed"));
    expect(lines).toHaveLength(1);
    const text = lines.join("\n");
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain(ENCODED);
    expect(JSON.parse(lines[0] ?? "")).toMatchObject({
      error: "401: key *** refused",
      url: "https://other.test/rpc?key=***&chain=1",
      attempts: [{ provider: "p1", last_error: "bad key ***" }],
      endpoint: "https://rpc.test/v2/***",
    });
  });
});
