import type { NetworkStatus } from "../core/status.ts";

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const cell = (value: unknown) =>
  `<td>${escapeHtml(value === null || value === undefined ? "–" : String(value))}</td>`;

function networkSection(status: NetworkStatus): string {
  const rows = status.providers
    .map(
      (provider) =>
        `<tr class="${escapeHtml(provider.state)}">${[
          provider.name,
          provider.url,
          provider.priority,
          provider.backup ? "backup" : "primary",
          provider.state,
          provider.in_quorum ? "yes" : `no (${provider.quorum_reason ?? "?"})`,
          provider.head.number,
          provider.head.lag_seconds,
          provider.strikes,
          provider.blacklist
            ? `${provider.blacklist.reason} until ${provider.blacklist.until}`
            : null,
          provider.last_probe ? `${provider.last_probe.result} at ${provider.last_probe.at}` : null,
          `${provider.stats.requests} req / ${provider.stats.errors} err`,
          provider.stats.latency_ms.p50 === null
            ? null
            : `${provider.stats.latency_ms.p50} / ${provider.stats.latency_ms.p95} ms`,
        ]
          .map(cell)
          .join("")}</tr>`,
    )
    .join("\n");
  const monitor = status.monitor.stale
    ? `<p class="warn">Monitor stale (last tick ${escapeHtml(status.monitor.last_tick_at ?? "never")}): every provider counts as in quorum.</p>`
    : `<p>Monitor last tick ${escapeHtml(status.monitor.last_tick_at ?? "never")}</p>`;
  return `<section>
<h2>${escapeHtml(status.network)} <small>chain ${status.chain_id}</small></h2>
<p>Quorum head ${escapeHtml(String(status.quorum.head ?? "–"))} · members ${escapeHtml(status.quorum.members.join(", ") || "–")} · active provider <b>${escapeHtml(status.active_provider ?? "none")}</b> · config ${escapeHtml(status.config_source.kind)} ${escapeHtml(status.config_source.etag ?? "")}</p>
${monitor}
<table><thead><tr><th>name</th><th>url</th><th>priority</th><th>role</th><th>state</th><th>in quorum</th><th>head</th><th>lag s</th><th>strikes</th><th>blacklist</th><th>last probe</th><th>traffic</th><th>p50 / p95</th></tr></thead>
<tbody>
${rows}
</tbody></table>
</section>`;
}

/** A readable, auto-refreshing page of every network's status (GET /status, Accept: text/html). */
export function statusPage(networks: readonly NetworkStatus[], generatedAt: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="5">
<title>RPC gateway status</title>
<style>
body{font:14px system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;width:100%}td,th{border:1px solid #ccc;padding:4px 6px;text-align:left}
tr.healthy td:nth-child(5){color:#176f2c}tr.blacklisted td:nth-child(5),tr.awaiting_probe td:nth-child(5){color:#b3261e}
tr.out_of_quorum td:nth-child(5){color:#9a6700}.warn{color:#b3261e;font-weight:bold}small{color:#666}
</style></head>
<body><h1>RPC gateway status</h1><p><small>generated ${escapeHtml(generatedAt)}, refreshes every 5 s</small></p>
${networks.map(networkSection).join("\n")}
</body></html>`;
}
