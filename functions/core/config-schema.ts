import { z } from "zod";

/**
 * The config-as-code schema (SPEC §1). Keys keep invictus-rpc's snake_case names so an
 * invictus config loads unchanged; every tunable has a default at the top level and may be
 * overridden inside a network.
 */

const positiveInt = z.number().int().positive();
const nonNegativeInt = z.number().int().nonnegative();
const seconds = z.number().positive();

/** A `${NAME}` secret placeholder; the name is group 1. */
export const PLACEHOLDER = /\$\{([^}]*)\}/g;
const PLACEHOLDER_NAME = /^[A-Z][A-Z0-9_]*$/;

/** Names of the `${NAME}` secret placeholders in a URL template. */
export function placeholdersOf(url: string): string[] {
  return [...url.matchAll(PLACEHOLDER)].map((match) => match[1] ?? "");
}

const providerUrl = z.string().superRefine((url, ctx) => {
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
});

const methodPatterns = z.array(z.string().min(1));

/** Builds a schema with defaults and its override twin (every field optional, no defaults). */
function withDefaults<T extends Record<string, z.ZodType>>(
  fields: T,
  defaults: { [K in keyof T]: z.input<T[K]> },
) {
  const shape = Object.fromEntries(
    Object.entries(fields).map(([key, field]) => [
      key,
      field.default(defaults[key as keyof T] as never),
    ]),
  ) as { [K in keyof T]: z.ZodDefault<T[K]> };
  const full = z.object(shape).strict();
  const override = z.object(fields).partial().strict();
  // prefault runs {} through the schema, so every field takes its own default.
  return { full: full.prefault({} as z.input<typeof full>), override };
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
    error_ratio: z.number().gt(0).max(1),
    missed_checks: positiveInt,
    missed_ratio: z.number().gt(0).max(1),
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
  failed_recently_checks: nonNegativeInt,
  chain_id_check_seconds: seconds,
};
const quorumDefaults = {
  check_timeout_ms: 7000,
  max_lag_seconds: 60,
  failed_recently_checks: 2,
  chain_id_check_seconds: 600,
};
const quorumFull = z
  .object({
    ...withDefaults(quorumFields, quorumDefaults).full.unwrap().shape,
    failing_often: failingOften.full,
  })
  .strict();
const quorum = {
  full: quorumFull.prefault({}),
  override: z
    .object({ ...quorumFields, failing_often: failingOften.override })
    .partial()
    .strict(),
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
  max_attempts: positiveInt.default(3),
  request_timeout_ms: positiveInt.default(10_000),
  request_deadline_ms: positiveInt.default(25_000),
  max_batch: positiveInt.default(100),
  max_body_bytes: positiveInt.default(1_048_576),
  max_response_bytes: positiveInt.default(6_000_000),
  diagnostic_headers: z.boolean().default(true),
  state_cache_ms: nonNegativeInt.default(1000),
  max_blacklist_minutes: seconds.default(30),
  slow_response_ms: positiveInt.default(3000),
  force_rotate_errors: positiveInt.default(3),
  cooldown_seconds: cooldown.full,
  probe: probe.full,
  quorum: quorum.full,
  methods_deny: methodPatterns.default([...DEFAULT_METHODS_DENY]),
  methods_allow: methodPatterns.optional(),
};

export const settingsSchema = z.object(tunableShape).strict();
export type Settings = z.infer<typeof settingsSchema>;

/** Overrides inside a network: every tunable optional, nested objects partial. */
const networkOverrideShape = {
  max_attempts: positiveInt.optional(),
  request_timeout_ms: positiveInt.optional(),
  request_deadline_ms: positiveInt.optional(),
  max_batch: positiveInt.optional(),
  max_body_bytes: positiveInt.optional(),
  max_response_bytes: positiveInt.optional(),
  diagnostic_headers: z.boolean().optional(),
  state_cache_ms: nonNegativeInt.optional(),
  max_blacklist_minutes: seconds.optional(),
  slow_response_ms: positiveInt.optional(),
  force_rotate_errors: positiveInt.optional(),
  cooldown_seconds: cooldown.override.optional(),
  probe: probe.override.optional(),
  quorum: quorum.override.optional(),
  methods_deny: methodPatterns.optional(),
  methods_allow: methodPatterns.optional(),
};

export const providerSchema = z
  .object({
    url: providerUrl,
    name: z
      .string()
      .regex(/^[A-Za-z0-9._:-]{1,64}$/, "use 1-64 letters, digits, '.', '_', ':' or '-'")
      .optional(),
    priority: z.number().int().default(1),
    tiebreak_weight: z.number().gt(0, "tiebreak_weight must be greater than 0").default(1),
    priority_match: z.record(z.string().min(1), z.number().int()).default({}),
    backup: z.boolean().default(false),
    methods_deny: methodPatterns.optional(),
    methods_allow: methodPatterns.optional(),
  })
  .strict();

export const networkSchema = z
  .object({
    chain_id: positiveInt,
    block_majority_divider: positiveInt.default(1),
    providers: z.array(providerSchema).min(1, "a network needs at least one provider"),
    ...networkOverrideShape,
  })
  .strict()
  .superRefine((network, ctx) => {
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
  });

const NETWORK_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;
const RESERVED_NETWORK_NAMES = new Set(["status", "health"]);

export const apiKeySchema = z
  .object({
    name: z.string().min(1),
    sha256: z.string().regex(/^[0-9a-f]{64}$/, "sha256 must be 64 lower-case hex characters"),
  })
  .strict();

export const configSchema = z
  .object({
    check_interval_seconds: seconds.default(15),
    config_refresh_seconds: seconds.default(30),
    inner_errors: z.array(z.string().min(1)).default([]),
    api_keys: z.array(apiKeySchema).default([]),
    networks: z.record(z.string(), networkSchema).superRefine((networks, ctx) => {
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
    ...tunableShape,
  })
  .strict();

export type ConfigInput = z.input<typeof configSchema>;
export type Config = z.infer<typeof configSchema>;
export type NetworkConfig = z.infer<typeof networkSchema>;
export type ProviderConfig = z.infer<typeof providerSchema>;
export type CooldownSeconds = z.infer<typeof cooldownSecondsSchema>;
