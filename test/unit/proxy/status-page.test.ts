import { describe, expect, it } from "vitest";
import type { HistoryPoint } from "../../../functions/core/health/stats-history.ts";
import { NO_LOG_CHECKS } from "../../../functions/core/request/logs/checks/logs-check-state.ts";
import type { EventStatus } from "../../../functions/core/status/events.ts";
import type { NetworkStatus, ProviderStatus } from "../../../functions/core/status/status.ts";
import { chart, niceCeiling } from "../../../functions/proxy/status-charts.ts";
import { STATUS_PAGE_HEADERS, statusPage } from "../../../functions/proxy/status-page.ts";

/**
 * The status page as HTML: what it shows, that nothing from outside (an upstream's text, a
 * stored event) can become markup, and that it loads nothing. Rendering in a real browser is
 * the end-to-end test's job (test/e2e/status/status-page.test.ts).
 */

const MINUTE = 60_000;
const NOW = Date.UTC(2026, 5, 1, 3, 0, 30);
const HOSTILE = `<script>alert(1)</script><img src=x onerror="alert(2)">"'&`;

const UNKNOWN_BOUND = {
  from: null,
  source: null,
  why: null,
  asked_last_below: null,
  asked_last_why: null,
};

const provider = (name: string, fields: Partial<ProviderStatus> = {}): ProviderStatus => ({
  name,
  url: `https://${name}.example.com/v3/***`,
  priority: 1,
  backup: false,
  state: "healthy",
  in_quorum: true,
  quorum_reason: null,
  quorum_detail: null,
  head: { number: 100, timestamp: NOW / 1000 - 2, lag_seconds: 0 },
  strikes: 0,
  blacklist: null,
  capability_blacklists: [],
  last_probe: null,
  stats: { window_seconds: 300, requests: 10, errors: 0, latency_ms: { p50: 4, p95: 9 } },
  routing: { slot: "candidate", reason: "priority 1" },
  limits: { max_batch: null, max_logs_range: null },
  log_checks: NO_LOG_CHECKS,
  history: {
    bounds: {
      state: {
        from: 936,
        source: "learned",
        why: "refused state at block 935",
        asked_last_below: 969,
        asked_last_why: "refused state at block 935: likely keeps only recent state",
      },
      proofs: UNKNOWN_BOUND,
      bodies: UNKNOWN_BOUND,
      receipts: UNKNOWN_BOUND,
      logs: {
        from: 0,
        source: "config",
        why: "configured (archive)",
        asked_last_below: null,
        asked_last_why: null,
      },
    },
    probe: null,
  },
  consensus: null,
  ...fields,
});

const event = (fields: Partial<EventStatus> = {}): EventStatus => ({
  at: new Date(NOW - 10 * MINUTE).toISOString(),
  provider: "main",
  kind: "blacklisted",
  reason: "connection",
  detail: "connect ECONNREFUSED; strike 1",
  ...fields,
});

function network(fields: Partial<NetworkStatus> = {}): NetworkStatus {
  return {
    network: "eth",
    chain_id: 1,
    config_source: { kind: "s3", etag: '"abc"', loaded_at: new Date(NOW).toISOString() },
    monitor: { last_tick_at: new Date(NOW - 5000).toISOString(), stale: false },
    quorum: { head: 100, head_timestamp: NOW / 1000 - 2, members: ["main"] },
    active_provider: "main",
    served_head: {
      latest: 100,
      safe: null,
      finalized: null,
      served: 100,
      reorg_seen_at: null,
      finality_broken_at: null,
      chain_reset_at: null,
    },
    providers: [provider("main")],
    providers_left_out: [],
    events: [],
    cache: {
      enabled: true,
      classes: {
        immutable: { hits: 0, misses: 0, ratio: null },
        unfinalized: { hits: 0, misses: 0, ratio: null },
        realtime: { hits: 0, misses: 0, ratio: null },
        never: { hits: 0, misses: 0, ratio: null },
      },
    },
    guards: {
      methods_deny: 0,
      methods_allow: 0,
      requests_per_minute: 0,
      cache_shared_writes_per_request: 0,
      cache_shared_writes_per_minute: 0,
      cache_shared_item_bytes: 0,
      cache_memory_request_bytes: 0,
      cache_callers_answer: 0,
      filter_calls_per_request: 0,
      ledger_claims_per_request: 0,
    },
    ...fields,
  };
}

/** An hour of points ending at NOW's minute; `errorsAt` minutes ago every request failed. */
function hour(errorsAt: number | null = null): HistoryPoint[] {
  const last = NOW - (NOW % MINUTE);
  return Array.from({ length: 60 }, (_, index) => {
    const minutesAgo = 59 - index;
    const failed = minutesAgo === errorsAt;
    return {
      start: last - minutesAgo * MINUTE,
      requests: 10,
      errors: failed ? 10 : 0,
      p50: 4,
      p95: failed ? 3000 : 9,
    };
  });
}

const page = (status: NetworkStatus, history = new Map([["main", hour()]])) =>
  statusPage([{ status, history }], NOW);

describe("the status page", () => {
  it("is a whole document that refreshes itself, fits a phone and loads nothing", () => {
    const html = page(network());
    expect(html.startsWith("<!doctype html>")).toBe(true);
    expect(html).toContain('<meta http-equiv="refresh" content="10">');
    expect(html).toContain('<meta name="viewport" content="width=device-width,initial-scale=1">');
    expect(html).not.toMatch(/<script|<link|<img|src=|href=|url\(|@import/i);
    expect(STATUS_PAGE_HEADERS["content-security-policy"]).toMatch(/^default-src 'none'/);
  });

  it("shows what each provider keeps of each resource, and the blocks it is asked last for (docs/behaviour.md §16.6)", () => {
    const html = page(network({ providers: [provider("main")] }));
    expect(html).toContain(
      "<dd>state from 936 (learned), asked last below 969 · logs from 0 (config)</dd>",
    );
    const unknown = provider("main", {
      history: {
        bounds: {
          state: UNKNOWN_BOUND,
          proofs: UNKNOWN_BOUND,
          bodies: UNKNOWN_BOUND,
          receipts: UNKNOWN_BOUND,
          logs: { ...UNKNOWN_BOUND, source: "probed", why: "serves no logs" },
        },
        probe: null,
      },
    });
    expect(page(network({ providers: [unknown] }))).toContain("<dd>no logs (probed)</dd>");
  });

  it("shows each provider's state, routing reason, head lag and traffic", () => {
    const html = page(
      network({
        providers: [
          provider("main", {
            state: "blacklisted",
            strikes: 2,
            blacklist: { reason: "rate_limit", until: new Date(NOW + 60_000).toISOString() },
            routing: {
              slot: "emergency",
              reason: "blacklisted (rate_limit) until …; tried only when no candidate answers",
            },
            head: { number: 97, timestamp: 0, lag_seconds: 36 },
          }),
          provider("spare", {
            backup: true,
            routing: { slot: "backup", reason: "backup: tried after the primaries" },
          }),
        ],
      }),
    );
    expect(html).toContain('<article class="provider blacklisted" data-provider="main">');
    expect(html).toContain("<b>emergency</b>: blacklisted (rate_limit) until");
    expect(html).toContain("<dd>97 · lag 36 s</dd>");
    expect(html).toContain("<dd>rate_limit until 03:01:30</dd>");
    expect(html).toContain("<dd>10 requests · 0 errors · p50 4 ms · p95 9 ms</dd>");
    // The slot is not said twice.
    expect(html).toContain("<b>backup</b>: tried after the primaries");
    expect(html).toContain("providers: <b>1 blacklisted, 1 healthy</b>");
  });

  it("charts the hour: the error spike as the one error bar, the minute and the peak in words", () => {
    const html = page(network(), new Map([["main", hour(12)]]));
    const errorChart = /<svg[^>]*aria-label="main: error ratio[^"]*"[\s\S]*?<\/svg>/.exec(
      html,
    )?.[0];
    expect(errorChart).toContain("peak 100 %");
    expect(errorChart?.match(/<rect /g)).toHaveLength(1);
    expect(html).toContain("errors · peak 100 % at 02:48");
    expect(html).toContain(
      'latency <span class="p50">p50</span>/<span class="p95">p95</span> · peak p95 3000 ms',
    );
  });

  it("marks the provider's events on its charts, and only events within the hour", () => {
    const html = page(
      network({
        events: [
          event({ kind: "probe_passed", at: new Date(NOW - 5 * MINUTE).toISOString() }),
          event({ at: new Date(NOW - 2 * 3600_000).toISOString() }),
          event({ provider: "other" }),
        ],
      }),
    );
    const charts = html.match(/<svg[\s\S]*?<\/svg>/g) ?? [];
    expect(charts).toHaveLength(3);
    for (const svg of charts) {
      expect(svg.match(/class="marker /g)).toHaveLength(1);
      expect(svg).toContain('class="marker good"');
    }
  });

  it("shows a provider's part in read consensus, and consensus events on the timeline with both answers' digests and the block", () => {
    const html = page(
      network({
        providers: [
          provider("main", {
            consensus: {
              agreed: 40,
              minority: 3,
              disputed: 1,
              minority_recent: 0,
              sit_out_until: new Date(NOW + 60_000).toISOString(),
            },
          }),
        ],
        events: [
          event({
            kind: "blacklisted",
            reason: "inconsistent",
            detail:
              "eth_getBalance at block 50: answered 5a1f0e where p1, p3 agreed on 9c0d11; strike 1",
          }),
          event({
            kind: "consensus_sat_out",
            reason: "minority",
            detail: "in the minority 3 times",
          }),
          event({
            provider: null,
            kind: "consensus_disputed",
            reason: "no_majority",
            detail: "eth_call at block 9: a: 01; b: 02",
          }),
        ],
      }),
    );
    expect(html).toContain(
      "<dd>40 agreed · 3 minority · 1 disputed · left out until 03:01:30</dd>",
    );
    const timeline = /<section class="events">[\s\S]*<\/section>/.exec(html)?.[0] ?? "";
    expect(timeline).toContain("answered 5a1f0e where p1, p3 agreed on 9c0d11");
    expect(timeline).toContain('<span class="what">left out of consensus</span>');
    expect(timeline).toContain('<span class="what">answers disputed</span>');
  });

  it("lists the network's events newest first, each with its provider, words, reason and detail", () => {
    const html = page(
      network({
        events: [
          event({ kind: "probe_passed", reason: "connection", detail: "alive at block 9" }),
          event({ provider: null, kind: "config_changed", reason: "s3", detail: 'ETag "abc"' }),
        ],
      }),
    );
    const timeline = /<section class="events">[\s\S]*<\/section>/.exec(html)?.[0] ?? "";
    expect(timeline).toContain(
      '<li class="event good" data-kind="probe_passed"><time datetime="2026-06-01T02:50:30.000Z" title="2026-06-01T02:50:30.000Z">02:50:30</time> <b class="who">main</b> <span class="what">probe passed</span> <span class="reason">connection</span> <span class="detail">alive at block 9</span></li>',
    );
    expect(timeline).toContain(
      '<b class="who">network</b> <span class="what">config changed</span>',
    );
    expect(timeline.indexOf("probe passed")).toBeLessThan(timeline.indexOf("config changed"));
  });

  it("says so when there are no events, and when the monitor is stale", () => {
    const html = page(network({ monitor: { last_tick_at: null, stale: true, note: "stale" } }));
    expect(html).toContain("<p>No events recorded.</p>");
    expect(html).toContain('<p class="warn">Monitor stale (last tick never)');
  });

  it("escapes whatever came from outside: event text, probe details, routing reasons, kinds", () => {
    const html = page(
      network({
        providers: [
          provider("main", {
            last_probe: { at: new Date(NOW).toISOString(), result: "fail", detail: HOSTILE },
            routing: { slot: "emergency", reason: HOSTILE },
          }),
        ],
        events: [
          event({ reason: HOSTILE, detail: HOSTILE }),
          event({ kind: HOSTILE as EventStatus["kind"] }),
        ],
      }),
    );
    expect(html).not.toContain("<script>");
    expect(html).not.toContain("<img");
    expect(html).not.toMatch(/onerror="/);
    expect(html).toContain("&#60;script&#62;alert(1)&#60;/script&#62;");
  });
});

describe("charts", () => {
  it.each([
    [0, 1],
    [0.3, 0.5],
    [1, 1],
    [3, 5],
    [7, 10],
    [12, 20],
    [99, 100],
    [101, 200],
    [4500, 5000],
    [Number.NaN, 1],
  ])("the y axis above %d reaches %d", (value, ceiling) => {
    expect(niceCeiling(value)).toBe(ceiling);
  });

  it("draws a bar per slot with a value, scaled to the axis, none for zero or no value", () => {
    const svg = chart({
      label: "x",
      slots: 4,
      max: 10,
      bars: { values: [10, 0, null, 5], className: "requests" },
    });
    expect(svg.match(/<rect /g)).toHaveLength(2);
    expect(svg).toContain('<rect x="0.5" y="2" width="59" height="46"/>');
    expect(svg).toContain('<rect x="180.5" y="25" width="59" height="23"/>');
  });

  it("breaks a line where a slot has no value and keeps a lone point visible", () => {
    const svg = chart({
      label: "x",
      slots: 4,
      max: 10,
      lines: [{ values: [10, 10, null, 0], className: "p50" }],
    });
    expect(svg).toContain('d="M30 2 L90 2 M210 48 l0.01 0"');
  });

  it("has an accessible name and a value axis it states", () => {
    const svg = chart({
      label: "requests per minute",
      slots: 2,
      bars: { values: [3, 7], className: "r" },
    });
    expect(svg).toMatch(
      /^<svg class="chart" [^>]*role="img" aria-label="requests per minute" data-max="10">/,
    );
    expect(svg).toContain("<title>requests per minute</title>");
  });
});
