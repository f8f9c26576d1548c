import { HISTORY_STEP_SECONDS, type HistoryPoint } from "../core/health/stats-history.ts";
import type { EventKind, EventStatus } from "../core/status/events.ts";
import type { NetworkStatus, ProviderStatus } from "../core/status/status.ts";
import { type ChartMarker, chart } from "./status-charts.ts";

/**
 * The status page (GET /status or GET /{network}/status from a browser): per network, each
 * provider's state and why traffic goes where it goes, its last hour of traffic as small
 * inline SVG charts with its events marked, and the network's events newest first. One HTML
 * answer with its style inline and no script: it renders from the Lambda's answer alone,
 * reads the same without JavaScript, refreshes itself with a meta refresh, and fits a phone.
 * Every text that came from outside (names, reasons, upstream details) is escaped.
 */

export interface StatusPageNetwork {
  readonly status: NetworkStatus;
  /** Each provider's traffic over the last hour, oldest point first. */
  readonly history: ReadonlyMap<string, readonly HistoryPoint[]>;
}

/** Seconds between the page's own refreshes. */
export const STATUS_PAGE_REFRESH_SECONDS = 10;

/** The page loads nothing and runs nothing: the policy says so to the browser. */
export const STATUS_PAGE_HEADERS: Readonly<Record<string, string>> = {
  "content-type": "text/html; charset=utf-8",
  "cache-control": "no-store",
  "content-security-policy":
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

/** Events a provider's card lists; the network's timeline has them all. */
const CARD_EVENTS = 5;

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const EVENT_LABELS: Readonly<Record<EventKind, string>> = {
  blacklisted: "blacklisted",
  capability_blacklisted: "method blacklisted",
  force_rotated: "force-rotated",
  probe_failed: "probe failed",
  probe_passed: "probe passed",
  quorum_excluded: "left quorum",
  quorum_rejoined: "rejoined quorum",
  config_changed: "config changed",
  head_stalled: "head stalled",
  head_resumed: "head moving again",
  logs_missing_data: "log answer missing data",
  chain_reset: "chain position reset",
  consensus_disputed: "answers disputed",
  consensus_sat_out: "left out of consensus",
};

/** A kind's words; a kind this code does not know (a newer writer's) shows as stored. */
const labelOf = (kind: EventKind): string => EVENT_LABELS[kind] ?? escapeHtml(kind);

/** Whether an event is bad news, good news or neither (its colour). */
function tone(kind: EventKind): "bad" | "good" | "info" {
  switch (kind) {
    case "probe_passed":
    case "quorum_rejoined":
    case "head_resumed":
      return "good";
    case "config_changed":
      return "info";
    default:
      return "bad";
  }
}

/** `HH:MM:SS` on the page's day (UTC), with the date in front otherwise. */
function shortTime(iso: string, today: string): string {
  return iso.slice(0, 10) === today
    ? iso.slice(11, 19)
    : `${iso.slice(5, 10)} ${iso.slice(11, 16)}`;
}

interface Clock {
  readonly today: string;
  time(iso: string): string;
}

function timeTag(iso: string, clock: Clock): string {
  return `<time datetime="${escapeHtml(iso)}" title="${escapeHtml(iso)}">${escapeHtml(clock.time(iso))}</time>`;
}

function eventItem(event: EventStatus, clock: Clock, withProvider: boolean): string {
  const who = withProvider ? `<b class="who">${escapeHtml(event.provider ?? "network")}</b> ` : "";
  const detail =
    event.detail === "" ? "" : ` <span class="detail">${escapeHtml(event.detail)}</span>`;
  return `<li class="event ${tone(event.kind)}" data-kind="${escapeHtml(event.kind)}">${timeTag(event.at, clock)} ${who}<span class="what">${labelOf(event.kind)}</span> <span class="reason">${escapeHtml(event.reason)}</span>${detail}</li>`;
}

function peakOf(points: readonly HistoryPoint[], value: (point: HistoryPoint) => number | null) {
  let peak: { value: number; start: number } | null = null;
  for (const point of points) {
    const v = value(point);
    if (v !== null && (peak === null || v > peak.value)) peak = { value: v, start: point.start };
  }
  return peak;
}

const minuteOf = (start: number) => new Date(start).toISOString().slice(11, 16);

function charts(
  provider: ProviderStatus,
  points: readonly HistoryPoint[],
  events: readonly EventStatus[],
): string {
  const first = points[0];
  if (first === undefined) return "";
  const stepMs = HISTORY_STEP_SECONDS * 1000;
  const markers: ChartMarker[] = events
    .filter((event) => event.provider === provider.name)
    .flatMap((event) => {
      const position = (Date.parse(event.at) - first.start) / stepMs;
      if (!(position >= 0 && position <= points.length)) return [];
      return [
        {
          position,
          className: tone(event.kind),
          title: `${escapeHtml(event.at.slice(11, 19))} ${labelOf(event.kind)} (${escapeHtml(event.reason)})`,
        },
      ];
    });
  const ratio = (point: HistoryPoint) =>
    point.requests > 0 ? Math.round((point.errors / point.requests) * 1000) / 10 : null;
  const requests = peakOf(points, (point) => point.requests);
  const errors = peakOf(points, ratio);
  const p95 = peakOf(points, (point) => point.p95);
  const name = escapeHtml(provider.name);
  const figures = [
    {
      label: `${name}: requests per minute over the last hour, peak ${requests?.value ?? 0}`,
      caption: `requests/min · peak ${requests?.value ?? 0}`,
      svg: (label: string) =>
        chart({
          label,
          slots: points.length,
          bars: { values: points.map((point) => point.requests), className: "requests" },
          markers,
        }),
    },
    {
      label: `${name}: error ratio per minute over the last hour, peak ${errors?.value ?? 0} %`,
      caption:
        errors && errors.value > 0
          ? `errors · peak ${errors.value} % at ${minuteOf(errors.start)}`
          : "errors · none",
      svg: (label: string) =>
        chart({
          label,
          slots: points.length,
          max: 100,
          bars: { values: points.map(ratio), className: "errors" },
          markers,
        }),
    },
    {
      label: `${name}: latency p50 and p95 per minute over the last hour, peak p95 ${p95?.value ?? 0} ms`,
      caption: p95
        ? `latency <span class="p50">p50</span>/<span class="p95">p95</span> · peak p95 ${p95.value} ms`
        : "latency · no traffic",
      svg: (label: string) =>
        chart({
          label,
          slots: points.length,
          lines: [
            { values: points.map((point) => point.p95), className: "p95" },
            { values: points.map((point) => point.p50), className: "p50" },
          ],
          markers,
        }),
    },
  ];
  return `<div class="charts">${figures
    .map(
      (figure) =>
        `<figure>${figure.svg(figure.label)}<figcaption>${figure.caption}</figcaption></figure>`,
    )
    .join("")}</div>`;
}

/** The routing reason without the slot it may repeat ("backup: tried after …"). */
function routingReason(provider: ProviderStatus): string {
  const { slot, reason } = provider.routing;
  return reason.startsWith(`${slot}: `) ? reason.slice(slot.length + 2) : reason;
}

/**
 * "state from 936 (learned), asked last below 1969 · logs from 0 (config)": what it keeps,
 * where known (docs/behaviour.md §16.6).
 */
function historySummary(provider: ProviderStatus): string {
  const known = Object.entries(provider.history.bounds).filter(
    ([, bound]) => bound.source !== null || bound.asked_last_below !== null,
  );
  if (known.length === 0) return "nothing known: taken to keep every block";
  return known
    .map(([resource, bound]) => {
      const from =
        bound.source === null
          ? resource
          : bound.from === null
            ? `no ${resource} (${bound.source})`
            : `${resource} from ${bound.from} (${bound.source})`;
      const last =
        bound.asked_last_below === null ? "" : `, asked last below ${bound.asked_last_below}`;
      return `${from}${last}`;
    })
    .join(" · ");
}

/** "2 healthy, 1 blacklisted": the network at a glance. */
function stateCounts(status: NetworkStatus): string {
  const counts = new Map<string, number>();
  for (const provider of status.providers) {
    counts.set(provider.state, (counts.get(provider.state) ?? 0) + 1);
  }
  const parts = [...counts].map(([state, count]) => `${count} ${state.replace("_", " ")}`);
  if (status.providers_left_out.length > 0)
    parts.push(`${status.providers_left_out.length} left out`);
  return parts.join(", ") || "no providers";
}

function providerCard(
  provider: ProviderStatus,
  history: readonly HistoryPoint[],
  events: readonly EventStatus[],
  clock: Clock,
): string {
  const stats = provider.stats;
  const facts: Array<[string, string]> = [
    [
      "head",
      provider.head.number === null
        ? "–"
        : `${provider.head.number}${provider.head.lag_seconds === null ? "" : ` · lag ${provider.head.lag_seconds} s`}`,
    ],
    ["quorum", provider.in_quorum ? "in quorum" : `out: ${provider.quorum_reason ?? "no answer"}`],
    ["strikes", String(provider.strikes)],
  ];
  if (provider.blacklist) {
    facts.push([
      "blacklist",
      `${provider.blacklist.reason} until ${clock.time(provider.blacklist.until)}`,
    ]);
  }
  if (provider.capability_blacklists.length > 0) {
    facts.push([
      "methods out",
      provider.capability_blacklists
        .map((entry) => `${entry.method} until ${clock.time(entry.until)}`)
        .join(", "),
    ]);
  }
  if (provider.consensus) {
    const { agreed, minority, disputed, sit_out_until: out } = provider.consensus;
    const sitting = out === null ? "" : ` · left out until ${clock.time(out)}`;
    facts.push([
      "consensus",
      `${agreed} agreed · ${minority} minority · ${disputed} disputed${sitting}`,
    ]);
  }
  if (provider.last_probe) {
    const probe = provider.last_probe;
    facts.push(["last probe", `${probe.result} at ${clock.time(probe.at)}: ${probe.detail}`]);
  }
  facts.push(["history", historySummary(provider)]);
  if (provider.history.probe) {
    const probe = provider.history.probe;
    facts.push(["history probe", `${clock.time(probe.at)}: ${probe.detail || probe.capabilities}`]);
  }
  const latency =
    stats.latency_ms.p50 === null
      ? ""
      : ` · p50 ${stats.latency_ms.p50} ms · p95 ${stats.latency_ms.p95} ms`;
  facts.push([
    `last ${Math.round(stats.window_seconds / 60)} min`,
    `${stats.requests} requests · ${stats.errors} errors${latency}`,
  ]);
  facts.push(["url", provider.url]);
  const own = events.filter((event) => event.provider === provider.name).slice(0, CARD_EVENTS);
  const recent =
    own.length === 0
      ? ""
      : `<ol class="timeline compact">${own.map((event) => eventItem(event, clock, false)).join("")}</ol>`;
  const role = `${provider.backup ? "backup" : "primary"} · priority ${provider.priority}`;
  return `<article class="provider ${escapeHtml(provider.state)}" data-provider="${escapeHtml(provider.name)}">
<header><h3>${escapeHtml(provider.name)}</h3> <span class="badge">${escapeHtml(provider.state.replace("_", " "))}</span> <span class="role">${role}</span></header>
<p class="routing"><b>${escapeHtml(provider.routing.slot)}</b>: ${escapeHtml(routingReason(provider))}</p>
<dl>${facts.map(([term, value]) => `<dt>${escapeHtml(term)}</dt><dd>${escapeHtml(value)}</dd>`).join("")}</dl>
${charts(provider, history, events)}${recent}
</article>`;
}

function networkSection(view: StatusPageNetwork, clock: Clock): string {
  const { status } = view;
  const monitor = status.monitor.stale
    ? `<p class="warn">Monitor stale (last tick ${escapeHtml(status.monitor.last_tick_at ?? "never")}): every provider counts as in quorum.</p>`
    : `<p>Monitor last tick ${status.monitor.last_tick_at ? timeTag(status.monitor.last_tick_at, clock) : "never"}</p>`;
  const source = status.config_source;
  const leftOut = status.providers_left_out.map(
    (provider) =>
      `<li><b>${escapeHtml(provider.name)}</b> left out: ${escapeHtml(provider.detail)}</li>`,
  );
  const timeline =
    status.events.length === 0
      ? "<p>No events recorded.</p>"
      : `<ol class="timeline">${status.events.map((event) => eventItem(event, clock, true)).join("\n")}</ol>`;
  return `<section class="network" id="${escapeHtml(status.network)}">
<h2>${escapeHtml(status.network)} <small>chain ${status.chain_id}</small></h2>
<p class="summary">providers: <b>${escapeHtml(stateCounts(status))}</b> · quorum head <b>${escapeHtml(String(status.quorum.head ?? "–"))}</b> · members ${escapeHtml(status.quorum.members.join(", ") || "none")} · active provider <b>${escapeHtml(status.active_provider ?? "none")}</b> · config ${escapeHtml(source.kind)}${source.etag ? ` ${escapeHtml(source.etag)}` : ""}</p>
${monitor}
${leftOut.length > 0 ? `<ul class="warn">${leftOut.join("")}</ul>` : ""}
<div class="providers">
${status.providers.map((provider) => providerCard(provider, view.history.get(provider.name) ?? [], status.events, clock)).join("\n")}
</div>
<section class="events"><h3>Events <small>newest first</small></h3>
${timeline}
</section>
</section>`;
}

const STYLE = `
:root{color-scheme:light dark;--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--card:#fff;--bg:#f6f8fa;
--good:#1a7f37;--bad:#cf222e;--wait:#bc4c00;--out:#9a6700;--req:#0969da;--p50:#0969da;--p95:#bc4c00}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9198a1;--line:#3d444d;--card:#151b23;--bg:#0d1117;
--good:#3fb950;--bad:#f85149;--wait:#db6d28;--out:#d29922;--req:#4493f8;--p50:#4493f8;--p95:#db6d28}}
*{box-sizing:border-box}
body{font:14px/1.4 system-ui,sans-serif;margin:0;padding:12px;color:var(--fg);background:var(--bg)}
h1{font-size:20px;margin:0 0 4px}h2{font-size:18px;margin:16px 0 4px}h3{font-size:15px;margin:0}
small,.role,.muted{color:var(--muted);font-weight:normal}
p{margin:4px 0}.warn{color:var(--bad);font-weight:bold}
.providers{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,330px),1fr));gap:10px;margin:8px 0}
.provider{background:var(--card);border:1px solid var(--line);border-left:5px solid var(--good);border-radius:6px;padding:8px 10px;min-width:0}
.provider.blacklisted{border-left-color:var(--bad)}.provider.awaiting_probe{border-left-color:var(--wait)}
.provider.out_of_quorum{border-left-color:var(--out)}
.provider header{display:flex;flex-wrap:wrap;gap:6px;align-items:baseline}
.badge{font-size:12px;padding:0 6px;border-radius:9px;color:#fff;background:var(--good)}
.blacklisted .badge{background:var(--bad)}.awaiting_probe .badge{background:var(--wait)}.out_of_quorum .badge{background:var(--out)}
dl{display:grid;grid-template-columns:max-content 1fr;gap:1px 8px;margin:6px 0}
dt{color:var(--muted)}dd{margin:0;overflow-wrap:anywhere}
.charts{display:grid;grid-template-columns:1fr;gap:4px}
figure{margin:0}figcaption{font-size:12px;color:var(--muted)}
figcaption .p50{color:var(--p50)}figcaption .p95{color:var(--p95)}
.chart{display:block;width:100%;height:40px;border-bottom:1px solid var(--line)}
.chart .axis{stroke:var(--line)}.chart .requests{fill:var(--req)}.chart .errors{fill:var(--bad)}
.chart path{fill:none;stroke-width:1.5;stroke-linecap:round;stroke-linejoin:round;vector-effect:non-scaling-stroke}
.chart .p50{stroke:var(--p50)}.chart .p95{stroke:var(--p95)}
.chart .marker{stroke-width:1;stroke-dasharray:2 2;vector-effect:non-scaling-stroke}
.chart .marker.bad{stroke:var(--bad)}.chart .marker.good{stroke:var(--good)}.chart .marker.info{stroke:var(--muted)}
.timeline{list-style:none;margin:4px 0;padding:0}
.timeline .event{border-left:3px solid var(--bad);padding:2px 0 2px 8px;margin:2px 0;overflow-wrap:anywhere}
.timeline .good{border-left-color:var(--good)}.timeline .info{border-left-color:var(--muted)}
.timeline time{font-variant-numeric:tabular-nums;color:var(--muted)}
.timeline .what{font-weight:bold}.timeline .bad .what{color:var(--bad)}.timeline .good .what{color:var(--good)}
.timeline .reason{font-family:ui-monospace,monospace;font-size:12px}
.timeline .detail{display:block;color:var(--muted);font-size:12px}
.timeline.compact{border-top:1px solid var(--line);margin-top:6px;padding-top:4px}
.events{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:8px 10px}
`;

/** The page for these networks; `now` (ms) is when it was drawn. */
export function statusPage(networks: readonly StatusPageNetwork[], now: number): string {
  const generated = new Date(now).toISOString();
  const today = generated.slice(0, 10);
  const clock: Clock = { today, time: (iso) => shortTime(iso, today) };
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<meta http-equiv="refresh" content="${STATUS_PAGE_REFRESH_SECONDS}">
<title>RPC gateway status</title>
<style>${STYLE}</style></head>
<body><h1>RPC gateway status</h1>
<p><small>generated <time datetime="${generated}">${generated.slice(0, 19).replace("T", " ")} UTC</time> · refreshes every ${STATUS_PAGE_REFRESH_SECONDS} s · charts: the last hour, a point a minute; dashed lines mark events</small></p>
${networks.map((view) => networkSection(view, clock)).join("\n")}
</body></html>`;
}
