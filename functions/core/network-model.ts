import {
  type Config,
  configSchema,
  type NetworkConfig,
  type ProviderConfig,
  type Settings,
  settingsSchema,
} from "./config-schema.ts";
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
  readonly methodsDeny: readonly string[] | undefined;
  readonly methodsAllow: readonly string[] | undefined;
}

export interface Network {
  readonly name: string;
  readonly chainId: number;
  readonly blockMajorityDivider: number;
  readonly providers: readonly Provider[];
  readonly settings: Settings;
}

export interface GatewayModel {
  readonly checkIntervalSeconds: number;
  readonly configRefreshSeconds: number;
  readonly innerErrors: readonly string[];
  readonly apiKeySha256: readonly string[];
  /** Browser origins allowed by CORS (`cors_origins`). */
  readonly corsOrigins: readonly string[];
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
        message: `unknown key(s) ${issue.keys.map((key) => `"${key}"`).join(", ")}: check the spelling against the README's config reference`,
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

function mergeSettings(config: Config, network: NetworkConfig): Settings {
  return settingsSchema.parse({
    max_attempts: network.max_attempts ?? config.max_attempts,
    request_timeout_ms: network.request_timeout_ms ?? config.request_timeout_ms,
    request_deadline_ms: network.request_deadline_ms ?? config.request_deadline_ms,
    max_batch: network.max_batch ?? config.max_batch,
    max_body_bytes: network.max_body_bytes ?? config.max_body_bytes,
    max_json_depth: network.max_json_depth ?? config.max_json_depth,
    max_response_bytes: network.max_response_bytes ?? config.max_response_bytes,
    diagnostic_headers: network.diagnostic_headers ?? config.diagnostic_headers,
    state_cache_ms: network.state_cache_ms ?? config.state_cache_ms,
    max_blacklist_minutes: network.max_blacklist_minutes ?? config.max_blacklist_minutes,
    slow_response_ms: network.slow_response_ms ?? config.slow_response_ms,
    force_rotate_errors: network.force_rotate_errors ?? config.force_rotate_errors,
    block_time_seconds: network.block_time_seconds ?? config.block_time_seconds,
    observed_head_max_ahead_blocks:
      network.observed_head_max_ahead_blocks ?? config.observed_head_max_ahead_blocks,
    max_capability_blacklists:
      network.max_capability_blacklists ?? config.max_capability_blacklists,
    learned_limit_ttl_seconds:
      network.learned_limit_ttl_seconds ?? config.learned_limit_ttl_seconds,
    cooldown_seconds: { ...config.cooldown_seconds, ...network.cooldown_seconds },
    probe: { ...config.probe, ...network.probe },
    quorum: {
      ...config.quorum,
      ...network.quorum,
      failing_often: { ...config.quorum.failing_often, ...network.quorum?.failing_often },
    },
    methods_deny: network.methods_deny ?? config.methods_deny,
    methods_allow: network.methods_allow ?? config.methods_allow,
  });
}

function nameProviders(providers: readonly ProviderConfig[]): string[] {
  const taken = new Set(providers.flatMap((provider) => (provider.name ? [provider.name] : [])));
  return providers.map((provider) => {
    if (provider.name) return provider.name;
    const base = deriveProviderName(provider.url);
    let name = base;
    for (let suffix = 2; taken.has(name); suffix++) name = `${base}-${suffix}`;
    taken.add(name);
    return name;
  });
}

/**
 * Builds the runtime model. `resolveUrl` turns a URL template into the real URL (secrets
 * filled in); it is injected so this stays pure.
 */
export function buildModel(config: Config, resolveUrl: (template: string) => string): GatewayModel {
  const networks = new Map<string, Network>();
  for (const [name, network] of Object.entries(config.networks)) {
    const names = nameProviders(network.providers);
    const providers = network.providers.map((provider, index): Provider => {
      const url = resolveUrl(provider.url);
      return {
        name: names[index] ?? `provider-${index}`,
        index,
        url,
        // From the template, so a secret that looks like a word is masked all the same.
        redactedUrl: redactTemplate(provider.url),
        priority: provider.priority,
        tiebreakWeight: provider.tiebreak_weight,
        priorityMatch: Object.entries(provider.priority_match),
        backup: provider.backup,
        maxBatch: provider.max_batch,
        methodsDeny: provider.methods_deny,
        methodsAllow: provider.methods_allow,
      };
    });
    networks.set(name, {
      name,
      chainId: network.chain_id,
      blockMajorityDivider: network.block_majority_divider,
      providers,
      settings: mergeSettings(config, network),
    });
  }
  return {
    checkIntervalSeconds: config.check_interval_seconds,
    configRefreshSeconds: config.config_refresh_seconds,
    innerErrors: config.inner_errors,
    apiKeySha256: config.api_keys.map((key) => key.sha256),
    corsOrigins: config.cors_origins,
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
