import { en } from "zod/locales";
import * as z from "zod/mini";

// zod/mini (18 KB, against 443 KB for classic zod) keeps the Lambda bundle small and its cold
// start short; the English locale gives the same messages classic zod would.
z.config(en());

/**
 * The config-as-code schema. Keys keep invictus-rpc's snake_case names so an
 * invictus config loads unchanged; every tunable has a default at the top level and may be
 * overridden inside a network.
 */

const positiveInt = z.int().check(z.positive());
const nonNegativeInt = z.int().check(z.nonnegative());
const seconds = z.number().check(z.positive());

/** A `${NAME}` secret placeholder; the name is group 1. */
export const PLACEHOLDER = /\$\{([^}]*)\}/g;
const PLACEHOLDER_NAME = /^[A-Z][A-Z0-9_]*$/;

/** Names of the `${NAME}` secret placeholders in a URL template. */
export function placeholdersOf(url: string): string[] {
  return [...url.matchAll(PLACEHOLDER)].map((match) => match[1] ?? "");
}

const providerUrl = z.string().check(
  z.superRefine((url, ctx) => {
    for (const name of placeholdersOf(url)) {
      if (!PLACEHOLDER_NAME.test(name)) {
        ctx.addIssue({
          code: "custom",
          message: `placeholder \${${name}} is not a valid secret name: use upper-case letters, digits and _ (e.g. \${ETH_KEY})`,
        });
      }
    }
    const sample = url.replace(PLACEHOLDER, "secret");
    let parsed: URL;
    try {
      parsed = new URL(sample);
    } catch {
      ctx.addIssue({ code: "custom", message: "not a valid URL: write it as https://host/path" });
      return;
    }
    if (parsed.protocol !== "https:" && parsed.protocol !== "http:") {
      ctx.addIssue({ code: "custom", message: "the URL must use http:// or https://" });
    }
    if (/\$\{/.test(url.split("/")[2] ?? "")) {
      ctx.addIssue({ code: "custom", message: "a secret placeholder may not stand in the host" });
    }
  }),
);

const nonEmptyString = z.string().check(z.minLength(1));
const methodPatterns = z.array(nonEmptyString);

/** Builds a schema with defaults and its override twin (every field optional, no defaults). */
function withDefaults<T extends Record<string, z.ZodMiniType>>(
  fields: T,
  defaults: { [K in keyof T]: z.output<T[K]> },
) {
  const shape = Object.fromEntries(
    Object.entries(fields).map(([key, field]) => [
      key,
      z._default(field, defaults[key as keyof T] as never),
    ]),
  ) as unknown as { [K in keyof T]: z.ZodMiniDefault<T[K]> };
  const full = z.strictObject(shape);
  const override = z.partial(z.strictObject(fields));
  // prefault runs {} through the schema, so every field takes its own default.
  return { shape, full: z.prefault(full, {} as z.input<typeof full>), override };
}

const cooldown = withDefaults(
  {
    rate_limit: seconds,
    quota: seconds,
    timeout: seconds,
    connection: seconds,
    tls: seconds,
    batch_limit: seconds,
    transient: seconds,
    slow: seconds,
    force_rotate: seconds,
    forbidden: seconds,
    chain_unavailable: seconds,
    wrong_chain: seconds,
    capability: seconds,
  },
  {
    rate_limit: 300,
    quota: 300,
    timeout: 180,
    connection: 120,
    tls: 120,
    batch_limit: 60,
    transient: 60,
    slow: 120,
    force_rotate: 60,
    forbidden: 86_400,
    chain_unavailable: 86_400,
    wrong_chain: 600,
    capability: 86_400,
  },
);
export const cooldownSecondsSchema = cooldown.full;

const probe = withDefaults(
  { timeout_ms: positiveInt, max_lag_seconds: seconds },
  { timeout_ms: 5000, max_lag_seconds: 60 },
);

const failingOften = withDefaults(
  {
    window_seconds: seconds,
    min_requests: positiveInt,
    error_ratio: z.number().check(z.gt(0), z.lte(1)),
    missed_checks: positiveInt,
    missed_ratio: z.number().check(z.gt(0), z.lte(1)),
    exclude_seconds: seconds,
  },
  {
    window_seconds: 300,
    min_requests: 20,
    error_ratio: 0.5,
    missed_checks: 10,
    missed_ratio: 0.5,
    exclude_seconds: 300,
  },
);

const quorumFields = {
  check_timeout_ms: positiveInt,
  max_lag_seconds: seconds,
  max_ahead_blocks: positiveInt,
  failed_recently_checks: nonNegativeInt,
  chain_id_check_seconds: seconds,
};
const quorumDefaults = {
  check_timeout_ms: 7000,
  max_lag_seconds: 60,
  max_ahead_blocks: 500,
  failed_recently_checks: 2,
  chain_id_check_seconds: 600,
};
const quorumFull = z.strictObject({
  ...withDefaults(quorumFields, quorumDefaults).shape,
  failing_often: failingOften.full,
});
const quorum = {
  full: z.prefault(quorumFull, {}),
  override: z.partial(z.strictObject({ ...quorumFields, failing_often: failingOften.override })),
};

export const DEFAULT_METHODS_DENY = [
  "admin_*",
  "personal_*",
  "miner_*",
  "engine_*",
  "debug_setHead",
] as const;

/** Tunables with their defaults: the shape every network ends up with after merging. */
const tunableShape = {
  max_attempts: z._default(positiveInt, 3),
  request_timeout_ms: z._default(positiveInt, 10_000),
  request_deadline_ms: z._default(positiveInt, 25_000),
  max_batch: z._default(positiveInt, 100),
  max_body_bytes: z._default(positiveInt, 1_048_576),
  max_response_bytes: z._default(positiveInt, 6_000_000),
  diagnostic_headers: z._default(z.boolean(), true),
  state_cache_ms: z._default(nonNegativeInt, 1000),
  max_blacklist_minutes: z._default(seconds, 30),
  slow_response_ms: z._default(positiveInt, 3000),
  force_rotate_errors: z._default(positiveInt, 3),
  max_upstream_calls: z._default(positiveInt, 50),
  cooldown_seconds: cooldown.full,
  probe: probe.full,
  quorum: quorum.full,
  methods_deny: z._default(methodPatterns, [...DEFAULT_METHODS_DENY]),
  methods_allow: z.optional(methodPatterns),
};

export const settingsSchema = z.strictObject(tunableShape);
export type Settings = z.infer<typeof settingsSchema>;

/** Overrides inside a network: every tunable optional, nested objects partial. */
const networkOverrideShape = {
  max_attempts: z.optional(positiveInt),
  request_timeout_ms: z.optional(positiveInt),
  request_deadline_ms: z.optional(positiveInt),
  max_batch: z.optional(positiveInt),
  max_body_bytes: z.optional(positiveInt),
  max_response_bytes: z.optional(positiveInt),
  diagnostic_headers: z.optional(z.boolean()),
  state_cache_ms: z.optional(nonNegativeInt),
  max_blacklist_minutes: z.optional(seconds),
  slow_response_ms: z.optional(positiveInt),
  force_rotate_errors: z.optional(positiveInt),
  max_upstream_calls: z.optional(positiveInt),
  cooldown_seconds: z.optional(cooldown.override),
  probe: z.optional(probe.override),
  quorum: z.optional(quorum.override),
  methods_deny: z.optional(methodPatterns),
  methods_allow: z.optional(methodPatterns),
};

export const providerSchema = z.strictObject({
  url: providerUrl,
  name: z.optional(
    z
      .string()
      .check(z.regex(/^[A-Za-z0-9._:-]{1,64}$/, "use 1-64 letters, digits, '.', '_', ':' or '-'")),
  ),
  priority: z._default(z.int(), 1),
  tiebreak_weight: z._default(
    z.number().check(z.gt(0, "tiebreak_weight must be greater than 0")),
    1,
  ),
  priority_match: z._default(z.record(nonEmptyString, z.int()), {}),
  backup: z._default(z.boolean(), false),
  methods_deny: z.optional(methodPatterns),
  methods_allow: z.optional(methodPatterns),
});

export const networkSchema = z
  .strictObject({
    chain_id: positiveInt,
    block_majority_divider: z._default(positiveInt, 1),
    providers: z
      .array(providerSchema)
      .check(z.minLength(1, "a network needs at least one provider")),
    ...networkOverrideShape,
  })
  .check(
    z.superRefine((network, ctx) => {
      if (network.providers.every((provider) => provider.backup)) {
        ctx.addIssue({
          code: "custom",
          path: ["providers"],
          message: "every provider is a backup: mark at least one as a primary (backup: false)",
        });
      }
      const seen = new Map<string, number>();
      network.providers.forEach((provider, index) => {
        if (provider.name === undefined) return;
        const first = seen.get(provider.name);
        if (first !== undefined) {
          ctx.addIssue({
            code: "custom",
            path: ["providers", index, "name"],
            message: `duplicate provider name "${provider.name}" (also providers[${first}]): names must be unique in a network`,
          });
        } else {
          seen.set(provider.name, index);
        }
      });
    }),
  );

const NETWORK_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;
const RESERVED_NETWORK_NAMES = new Set(["status", "health"]);

export const apiKeySchema = z.strictObject({
  name: nonEmptyString,
  sha256: z
    .string()
    .check(z.regex(/^[0-9a-f]{64}$/, "sha256 must be 64 lower-case hex characters")),
  /** Requests per minute this key may make, across every container; none = unlimited. */
  requests_per_minute: z.optional(positiveInt),
});

/**
 * Limits of the platform the runtime silently depends on. A config beyond them would load and
 * then misbehave (requests cut by API Gateway, a monitor that never ticks), so it is invalid:
 * `config:check` and the synth refuse it, and a running gateway keeps the last good config.
 */
export const PLATFORM_LIMITS = {
  /** API Gateway's 29 s integration timeout and the proxy Lambda's 29 s, less 1 s of the gateway's own work. */
  maxRequestDeadlineMs: 28_000,
  /** Lambda's 6 MB response payload, with room for the response envelope. */
  maxResponseBytes: 6_000_000,
  /** Lambda's 6 MB request payload holds the body base64-encoded (4/3 of its size) when it is not text. */
  maxBodyBytes: 4_500_000,
  /** A scheduled monitor run lasts 58 s: one tick (quorum check, then probe, then ~1 s of storage) must fit. */
  monitorRunMs: 58_000,
  monitorTickStorageMs: 1_000,
  /** Request stats are kept one hour (DynamoDB TTL): "failing often" cannot look further back. */
  statsRetentionSeconds: 3_600,
  /** Timers and polling below one second cost more than they tell. */
  minIntervalSeconds: 1,
} as const;

type Issue = { readonly path: PropertyKey[]; readonly message: string };

/** The cross-field and platform bounds, on each network's merged settings. */
function boundIssues(config: {
  readonly check_interval_seconds: number;
  readonly config_refresh_seconds: number;
  readonly api_keys: ReadonlyArray<{ readonly name: string }>;
  readonly networks: Readonly<Record<string, z.infer<typeof networkSchema>>>;
  readonly [key: string]: unknown;
}): Issue[] {
  const limits = PLATFORM_LIMITS;
  const issues: Issue[] = [];
  for (const key of ["check_interval_seconds", "config_refresh_seconds"] as const) {
    if (config[key] < limits.minIntervalSeconds) {
      issues.push({ path: [key], message: `${key} must be at least ${limits.minIntervalSeconds}` });
    }
  }
  const keyNames = new Map<string, number>();
  config.api_keys.forEach((key, index) => {
    const first = keyNames.get(key.name);
    if (first === undefined) keyNames.set(key.name, index);
    else {
      issues.push({
        path: ["api_keys", index, "name"],
        message: `duplicate API key name "${key.name}" (also api_keys[${first}]): names key the usage counters and logs, so they must be unique`,
      });
    }
  });
  const top = config as unknown as z.infer<typeof settingsSchema>;
  for (const [name, network] of Object.entries(config.networks)) {
    /** The value in force for this network, and where to report it. */
    const setting = <T>(pick: (settings: Partial<typeof top>) => T | undefined, path: string[]) => {
      const own = pick(network as Partial<typeof top>);
      return own === undefined
        ? { value: pick(top) as T, path, where: "" }
        : { value: own, path: ["networks", name, ...path], where: ` in network ${name}` };
    };
    const deadline = setting((s) => s.request_deadline_ms, ["request_deadline_ms"]);
    if (deadline.value > limits.maxRequestDeadlineMs) {
      issues.push({
        path: deadline.path,
        message: `request_deadline_ms ${deadline.value}${deadline.where} is over ${limits.maxRequestDeadlineMs}: API Gateway cuts a request at 29 s, and the proxy needs 1 s to answer`,
      });
    }
    const timeout = setting((s) => s.request_timeout_ms, ["request_timeout_ms"]);
    if (timeout.value > deadline.value) {
      issues.push({
        path: timeout.path,
        message: `request_timeout_ms ${timeout.value}${timeout.where} is over request_deadline_ms ${deadline.value}: an attempt cannot outlast its request`,
      });
    }
    const response = setting((s) => s.max_response_bytes, ["max_response_bytes"]);
    if (response.value > limits.maxResponseBytes) {
      issues.push({
        path: response.path,
        message: `max_response_bytes ${response.value}${response.where} is over ${limits.maxResponseBytes}: Lambda cannot return more than 6 MB`,
      });
    }
    const body = setting((s) => s.max_body_bytes, ["max_body_bytes"]);
    if (body.value > limits.maxBodyBytes) {
      issues.push({
        path: body.path,
        message: `max_body_bytes ${body.value}${body.where} is over ${limits.maxBodyBytes}: a larger body does not fit Lambda's 6 MB request payload`,
      });
    }
    const attempts = setting((s) => s.max_attempts, ["max_attempts"]);
    const calls = setting((s) => s.max_upstream_calls, ["max_upstream_calls"]);
    if (calls.value < attempts.value) {
      issues.push({
        path: calls.path,
        message: `max_upstream_calls ${calls.value}${calls.where} is under max_attempts ${attempts.value}: a single call could not use its attempts`,
      });
    }
    const check = setting((s) => s.quorum?.check_timeout_ms, ["quorum", "check_timeout_ms"]);
    const probe = setting((s) => s.probe?.timeout_ms, ["probe", "timeout_ms"]);
    const tick = check.value + probe.value + limits.monitorTickStorageMs;
    if (tick > limits.monitorRunMs) {
      issues.push({
        path: check.path,
        message: `quorum.check_timeout_ms ${check.value} + probe.timeout_ms ${probe.value}${check.where || probe.where} leave no room for a monitor tick: together with 1 s of storage they must fit the monitor's ${limits.monitorRunMs / 1000} s run`,
      });
    }
    const window = setting(
      (s) => s.quorum?.failing_often?.window_seconds,
      ["quorum", "failing_often", "window_seconds"],
    );
    if (window.value > limits.statsRetentionSeconds) {
      issues.push({
        path: window.path,
        message: `quorum.failing_often.window_seconds ${window.value}${window.where} is over ${limits.statsRetentionSeconds}: request stats are kept one hour`,
      });
    }
  }
  // One problem per path: a top-level value over a bound would be reported once per network.
  const seen = new Set<string>();
  return issues.filter((issue) => {
    const key = issue.path.join(".");
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

export const configSchema = z
  .strictObject({
    check_interval_seconds: z._default(seconds, 15),
    config_refresh_seconds: z._default(seconds, 30),
    inner_errors: z._default(z.array(nonEmptyString), []),
    api_keys: z._default(z.array(apiKeySchema), []),
    networks: z.record(z.string(), networkSchema).check(
      z.superRefine((networks, ctx) => {
        for (const name of Object.keys(networks)) {
          if (!NETWORK_NAME.test(name) || RESERVED_NETWORK_NAMES.has(name)) {
            ctx.addIssue({
              code: "custom",
              path: [name],
              message: `network name "${name}" must be lower-case letters, digits and '-', and not "status" or "health"`,
            });
          }
        }
        if (Object.keys(networks).length === 0) {
          ctx.addIssue({ code: "custom", message: "configure at least one network" });
        }
      }),
    ),
    ...tunableShape,
  })
  .check(
    z.superRefine((config, ctx) => {
      for (const issue of boundIssues(config)) {
        ctx.addIssue({ code: "custom", path: issue.path, message: issue.message });
      }
    }),
  );

export type ConfigInput = z.input<typeof configSchema>;
export type Config = z.infer<typeof configSchema>;
export type NetworkConfig = z.infer<typeof networkSchema>;
export type ProviderConfig = z.infer<typeof providerSchema>;
export type CooldownSeconds = z.infer<typeof cooldownSecondsSchema>;
