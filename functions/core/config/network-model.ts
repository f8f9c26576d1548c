import {
  type Config,
  configSchema,
  type NetworkConfig,
  type ProviderConfig,
  type Settings,
} from "./config-schema.ts";
import type { ConsensusConfig } from "./consensus-schema.ts";
import { type ConfiguredHistory, configuredHistory } from "./history-schema.ts";
import { redactTemplate } from "./redact.ts";

/** A provider as the gateway uses it: name settled, secrets resolved, URL redacted once. */
export interface Provider {
  readonly name: string;
  /** Position in the config, for stable ordering. */
  readonly index: number;
  readonly url: string;
  readonly redactedUrl: string;
  readonly priority: number;
  readonly tiebreakWeight: number;
  readonly priorityMatch: ReadonlyArray<readonly [string, number]>;
  readonly backup: boolean;
  /** The configured largest batch, if any (learned limits live in the shared state). */
  readonly maxBatch: number | undefined;
  /** The configured most blocks one eth_getLogs may span, if any (learned ones live in the shared state). */
  readonly maxLogsRange: number | undefined;
  /** What the config says it keeps of each resource (docs/behaviour.md §16); null: nothing. */
  readonly history: ConfiguredHistory;
  readonly methodsDeny: readonly string[] | undefined;
  readonly methodsAllow: readonly string[] | undefined;
}

/**
 * A configured provider the gateway cannot use: its URL needs a secret that did not resolve.
 * It is left out of `providers` (no traffic, no quorum check) and shown on the status route.
 */
export interface LeftOutProvider {
  readonly name: string;
  readonly redactedUrl: string;
  readonly priority: number;
  readonly backup: boolean;
  readonly reason: "secret_unresolved";
  /** Which placeholder and where it was looked for; never a value. */
  readonly detail: string;
}

export interface Network {
  readonly name: string;
  readonly chainId: number;
  readonly blockMajorityDivider: number;
  readonly providers: readonly Provider[];
  readonly leftOut: readonly LeftOutProvider[];
  readonly settings: Settings;
  /** Read consensus (docs/behaviour.md §17), or null when the network has none. */
  readonly consensus: ConsensusConfig | null;
}

export interface GatewayModel {
  readonly checkIntervalSeconds: number;
  readonly configRefreshSeconds: number;
  readonly innerErrors: readonly string[];
  /** This container's memory for cached answers, every network together (bytes). */
  readonly cacheMemoryBytes: number;
  /** What one request may add to that memory (bytes). */
  readonly cacheMemoryRequestBytes: number;
  /** Shared-tier writes this container may make in a minute, every network together. */
  readonly cacheSharedWritesPerMinute: number;
  /** Browser origins allowed by CORS (`cors_origins`). */
  readonly corsOrigins: readonly string[];
  /** The keys with their names and usage limits (null = unlimited), in config order. */
  readonly apiKeys: ReadonlyArray<{
    readonly name: string;
    readonly sha256: string;
    readonly requestsPerMinute: number | null;
  }>;
  readonly networks: ReadonlyMap<string, Network>;
}

export interface ConfigProblem {
  /** JSON path, e.g. `networks.ethereum.providers[1].url`. */
  readonly path: string;
  readonly message: string;
}

export type ParseResult =
  | { readonly ok: true; readonly config: Config }
  | { readonly ok: false; readonly problems: readonly ConfigProblem[] };

export function formatPath(path: ReadonlyArray<PropertyKey>): string {
  let out = "";
  for (const part of path) {
    if (typeof part === "number") out += `[${part}]`;
    else out += out === "" ? String(part) : `.${String(part)}`;
  }
  return out === "" ? "(root)" : out;
}

/** Validates a parsed JSON value against the schema, naming every problem by its path. */
export function parseConfig(value: unknown): ParseResult {
  const result = configSchema.safeParse(value);
  if (result.success) return { ok: true, config: result.data };
  const problems = result.error.issues.map((issue) => {
    const path = formatPath(issue.path);
    if (issue.code === "unrecognized_keys") {
      return {
        path,
        message: `unknown key(s) ${issue.keys.map((key) => `"${key}"`).join(", ")}: check the spelling against docs/config-reference.md`,
      };
    }
    return { path, message: issue.message };
  });
  return { ok: false, problems };
}

/** Derives a provider name from its host: the registrable label ("eth.llamarpc.com" → "llamarpc"). */
export function deriveProviderName(urlTemplate: string): string {
  let host: string;
  let port: string;
  try {
    const url = new URL(urlTemplate.replace(/\$\{[^}]*\}/g, "secret"));
    host = url.hostname;
    port = url.port;
  } catch {
    return "provider";
  }
  const isIp = /^[\d.]+$/.test(host) || host.includes(":") || host.startsWith("[");
  if (isIp || host === "localhost") return port ? `${host}:${port}` : host;
  const labels = host.split(".").filter((label) => label !== "www");
  const label = labels.length >= 2 ? labels[labels.length - 2] : labels[0];
  return label ?? host;
}

/**
 * A network's settings: its own overrides over the top level's values. Both are validated
 * parts of the config, so the merge needs no schema (the config schema, built on first use,
 * is then never built for a config validated at build time).
 */
function mergeSettings(config: Config, network: NetworkConfig): Settings {
  return {
    max_attempts: network.max_attempts ?? config.max_attempts,
    request_timeout_ms: network.request_timeout_ms ?? config.request_timeout_ms,
    request_deadline_ms: network.request_deadline_ms ?? config.request_deadline_ms,
    max_batch: network.max_batch ?? config.max_batch,
    max_body_bytes: network.max_body_bytes ?? config.max_body_bytes,
    max_json_depth: network.max_json_depth ?? config.max_json_depth,
    max_response_bytes: network.max_response_bytes ?? config.max_response_bytes,
    diagnostic_headers: network.diagnostic_headers ?? config.diagnostic_headers,
    state_cache_ms: network.state_cache_ms ?? config.state_cache_ms,
    head_cache_ms: network.head_cache_ms ?? config.head_cache_ms,
    max_blacklist_minutes: network.max_blacklist_minutes ?? config.max_blacklist_minutes,
    slow_response_ms: network.slow_response_ms ?? config.slow_response_ms,
    force_rotate_errors: network.force_rotate_errors ?? config.force_rotate_errors,
    block_time_seconds: network.block_time_seconds ?? config.block_time_seconds,
    head_tolerance_blocks: network.head_tolerance_blocks ?? config.head_tolerance_blocks,
    pin_block_tags: network.pin_block_tags ?? config.pin_block_tags,
    broadcast_to: network.broadcast_to ?? config.broadcast_to,
    observed_head_max_ahead_blocks:
      network.observed_head_max_ahead_blocks ?? config.observed_head_max_ahead_blocks,
    max_capability_blacklists:
      network.max_capability_blacklists ?? config.max_capability_blacklists,
    learned_limit_ttl_seconds:
      network.learned_limit_ttl_seconds ?? config.learned_limit_ttl_seconds,
    max_upstream_calls: network.max_upstream_calls ?? config.max_upstream_calls,
    cache: network.cache ?? config.cache,
    cache_shared_ttl_seconds: network.cache_shared_ttl_seconds ?? config.cache_shared_ttl_seconds,
    cache_shared_writes_per_request:
      network.cache_shared_writes_per_request ?? config.cache_shared_writes_per_request,
    cache_shared_item_bytes: network.cache_shared_item_bytes ?? config.cache_shared_item_bytes,
    logs_concurrency: network.logs_concurrency ?? config.logs_concurrency,
    max_filters_per_key: network.max_filters_per_key ?? config.max_filters_per_key,
    filter_idle_seconds: network.filter_idle_seconds ?? config.filter_idle_seconds,
    logs_bloom: network.logs_bloom ?? config.logs_bloom,
    logs_check_headers: network.logs_check_headers ?? config.logs_check_headers,
    logs_check_receipts: network.logs_check_receipts ?? config.logs_check_receipts,
    logs_check_window_blocks: network.logs_check_window_blocks ?? config.logs_check_window_blocks,
    cooldown_seconds: { ...config.cooldown_seconds, ...network.cooldown_seconds },
    probe: { ...config.probe, ...network.probe },
    quorum: {
      ...config.quorum,
      ...network.quorum,
      failing_often: { ...config.quorum.failing_often, ...network.quorum?.failing_often },
    },
    events: { ...config.events, ...network.events },
    hedge: { ...config.hedge, ...network.hedge },
    history_bounds: { ...config.history_bounds, ...network.history_bounds },
    subscriptions: { ...config.subscriptions, ...network.subscriptions },
    methods_deny: network.methods_deny ?? config.methods_deny,
    methods_allow: network.methods_allow ?? config.methods_allow,
  };
}

/** FNV-1a, 32 bits, as 8 hex digits: a stable, dependency-free fingerprint of a short text. */
export function fingerprint(text: string): string {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index++) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, "0");
}

/**
 * Settles every provider's name without regard to its position in the file, so reordering
 * never moves strikes, blacklists or stats to another provider. A derived name shared by
 * several providers (or taken by an explicit name) gets a suffix from a fingerprint of the
 * redacted URL template, or of the template itself when the redacted forms are alike (keys
 * differ only in placeholders); only exact duplicates fall back to `-2`, `-3`, which are
 * interchangeable anyway.
 */
export function nameProviders(providers: readonly ProviderConfig[]): string[] {
  const explicit = new Set(providers.flatMap((provider) => (provider.name ? [provider.name] : [])));
  const bases = providers.map((provider) =>
    provider.name ? null : deriveProviderName(provider.url),
  );
  const shared = (base: string): boolean =>
    explicit.has(base) || bases.filter((other) => other === base).length > 1;
  const redactedCount = new Map<string, number>();
  for (const provider of providers) {
    const key = redactTemplate(provider.url);
    redactedCount.set(key, (redactedCount.get(key) ?? 0) + 1);
  }
  const taken = new Set(explicit);
  return providers.map((provider, index) => {
    const base = bases[index];
    if (base === null || base === undefined) return provider.name ?? "";
    let name = base;
    if (shared(base)) {
      const redacted = redactTemplate(provider.url);
      const source = (redactedCount.get(redacted) ?? 0) > 1 ? provider.url : redacted;
      name = `${base}-${fingerprint(source).slice(0, 6)}`;
    }
    const stem = name;
    for (let suffix = 2; taken.has(name); suffix++) name = `${stem}-${suffix}`;
    taken.add(name);
    return name;
  });
}

/** A provider's real URL (secrets filled in), or why it cannot be had. */
export type ResolvedUrl = string | { readonly unresolved: string };

/**
 * Builds the runtime model. `resolveUrl` turns a URL template into the real URL (secrets
 * filled in); it is injected so this stays pure. A provider whose URL cannot be resolved is
 * left out of its network, with the reason, and every other provider serves.
 */
export function buildModel(
  config: Config,
  resolveUrl: (template: string) => ResolvedUrl,
): GatewayModel {
  const networks = new Map<string, Network>();
  for (const [name, network] of Object.entries(config.networks)) {
    const names = nameProviders(network.providers);
    const providers: Provider[] = [];
    const leftOut: LeftOutProvider[] = [];
    network.providers.forEach((provider, index) => {
      const providerName = names[index] ?? `provider-${index}`;
      // From the template, so a secret that looks like a word is masked all the same.
      const redactedUrl = redactTemplate(provider.url);
      const url = resolveUrl(provider.url);
      if (typeof url !== "string") {
        leftOut.push({
          name: providerName,
          redactedUrl,
          priority: provider.priority,
          backup: provider.backup,
          reason: "secret_unresolved",
          detail: url.unresolved,
        });
        return;
      }
      providers.push({
        name: providerName,
        index,
        url,
        redactedUrl,
        priority: provider.priority,
        tiebreakWeight: provider.tiebreak_weight,
        priorityMatch: Object.entries(provider.priority_match),
        backup: provider.backup,
        maxBatch: provider.max_batch,
        maxLogsRange: provider.max_logs_range,
        history: configuredHistory(provider.archive, provider.history),
        methodsDeny: provider.methods_deny,
        methodsAllow: provider.methods_allow,
      });
    });
    networks.set(name, {
      name,
      chainId: network.chain_id,
      blockMajorityDivider: network.block_majority_divider,
      providers,
      leftOut,
      settings: mergeSettings(config, network),
      consensus: network.consensus ?? null,
    });
  }
  return {
    checkIntervalSeconds: config.check_interval_seconds,
    configRefreshSeconds: config.config_refresh_seconds,
    innerErrors: config.inner_errors,
    cacheMemoryBytes: config.cache_memory_bytes,
    cacheMemoryRequestBytes: config.cache_memory_request_bytes,
    cacheSharedWritesPerMinute: config.cache_shared_writes_per_minute,
    corsOrigins: config.cors_origins,
    apiKeys: config.api_keys.map((key) => ({
      name: key.name,
      sha256: key.sha256,
      requestsPerMinute: key.requests_per_minute ?? null,
    })),
    networks,
  };
}

/** Each provider's resolved URL with its redacted form, for scrubbing free text. */
export function urlRedactions(model: GatewayModel): Array<{ resolved: string; redacted: string }> {
  return [...model.networks.values()].flatMap((network) =>
    network.providers.map((provider) => ({
      resolved: provider.url,
      redacted: provider.redactedUrl,
    })),
  );
}

/** Which config is in force: the S3 object (with its ETag), the bundled copy, or a file. */
export interface ConfigSourceInfo {
  readonly kind: "s3" | "bundled" | "file";
  /** The S3 object's ETag; only for kind "s3". */
  readonly etag?: string;
  /** ISO-8601 time this config came into force. */
  readonly loaded_at: string;
}
