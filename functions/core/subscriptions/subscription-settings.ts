import * as z from "zod/mini";

/**
 * The `subscriptions` block of the config (docs/behaviour.md "Subscriptions over WebSocket"),
 * at the top level and inside a network: the bounds on WebSocket connections and
 * subscriptions, and how far back a subscription may resume.
 */
export const SUBSCRIPTION_DEFAULTS = {
  /** Subscriptions one connection holds at once. */
  max_per_connection: 32,
  /** Subscriptions one API key holds at once on a network, over all its connections. */
  max_per_key: 1000,
  /** Connections one API key holds open at once on a network. */
  max_connections_per_key: 100,
  /** Subscriptions a network holds at once (the follower lists them every block). */
  max_per_network: 10_000,
  /** How far back (seconds of blocks) `resumeFrom` may name the last block seen; 0: no resume. */
  resume_window_seconds: 600,
  /**
   * How long the follower asks providers for a block's logs before telling its `logs`
   * subscribers they could not be delivered (and closing their sockets).
   */
  delivery_timeout_seconds: 30,
} as const;

/** Builds the block's schemas: with defaults (top level) and every key optional (a network's). */
export function defineSubscriptionSchemas() {
  const fields = {
    max_per_connection: z.int().check(z.gte(1), z.lte(1000)),
    max_per_key: z.int().check(z.gte(1), z.lte(100_000)),
    // Each connect reads the key's slots (filter-store's idea): at most 10,000 small items.
    max_connections_per_key: z.int().check(z.gte(1), z.lte(10_000)),
    max_per_network: z.int().check(z.gte(1), z.lte(100_000)),
    resume_window_seconds: z.number().check(z.gte(0), z.lte(3600)),
    delivery_timeout_seconds: z.number().check(z.gte(1), z.lte(600)),
  };
  const full = z.strictObject({
    max_per_connection: z._default(
      fields.max_per_connection,
      SUBSCRIPTION_DEFAULTS.max_per_connection,
    ),
    max_per_key: z._default(fields.max_per_key, SUBSCRIPTION_DEFAULTS.max_per_key),
    max_connections_per_key: z._default(
      fields.max_connections_per_key,
      SUBSCRIPTION_DEFAULTS.max_connections_per_key,
    ),
    max_per_network: z._default(fields.max_per_network, SUBSCRIPTION_DEFAULTS.max_per_network),
    resume_window_seconds: z._default(
      fields.resume_window_seconds,
      SUBSCRIPTION_DEFAULTS.resume_window_seconds,
    ),
    delivery_timeout_seconds: z._default(
      fields.delivery_timeout_seconds,
      SUBSCRIPTION_DEFAULTS.delivery_timeout_seconds,
    ),
  });
  return {
    full: z.prefault(full, {}),
    override: z.partial(z.strictObject(fields)),
  };
}
