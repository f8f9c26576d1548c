import { describe, expect, it } from "vitest";
import { createTelemetry } from "../../functions/adapters/telemetry.ts";
import { makeScrubber } from "../../functions/core/redact.ts";
import { captureOutput } from "../support/capture-output.ts";
import { parseEmf } from "../support/emf.ts";

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
