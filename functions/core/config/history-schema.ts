import * as z from "zod/mini";
import { HISTORY_RESOURCES, type HistoryResource } from "../history/resources.ts";
import { withDefaults } from "./with-defaults.ts";

/**
 * The config keys of history-aware routing (docs/behaviour.md §16): per provider, how much
 * history it keeps (`archive`, `history`); per network, how the rest is learned and probed
 * (`history_bounds`). Built inside `defineConfigSchemas`, on first use like every schema.
 */
export function defineHistorySchemas() {
  const block = z.int().check(z.nonnegative());
  const blocks = z.int().check(z.positive());
  /**
   * `<resource>_from`: the oldest block it keeps; `<resource>_blocks`: it keeps the last this
   * many blocks (a window that moves with its head). Both may be given: the later of the two.
   */
  const providerHistory = z.strictObject(
    Object.fromEntries(
      HISTORY_RESOURCES.flatMap((resource) => [
        [`${resource}_from`, z.optional(block)],
        [`${resource}_blocks`, z.optional(blocks)],
      ]),
    ) as Record<`${HistoryResource}_${"from" | "blocks"}`, z.ZodMiniOptional<typeof block>>,
  );
  /**
   * `probe_seconds`: how often the monitor asks each provider what it keeps (0: never);
   * `learned_ttl_seconds`: how long a bound learned from a provider's own refusal stands.
   */
  const historyBounds = withDefaults(
    {
      probe_seconds: z.number().check(z.gte(0), z.lte(86_400)),
      learned_ttl_seconds: z.number().check(z.gte(60), z.lte(604_800)),
    },
    { probe_seconds: 300, learned_ttl_seconds: 3600 },
  );
  return { providerHistory, historyBounds };
}

/** What the config says one provider keeps of one resource; null when it says nothing. */
export interface ConfiguredBound {
  /** The oldest block kept, or null. */
  readonly from: number | null;
  /** It keeps the last this many blocks, or null. */
  readonly blocks: number | null;
}

export type ConfiguredHistory = Readonly<Record<HistoryResource, ConfiguredBound | null>>;

/**
 * A provider's configured history: `archive: true` keeps every resource from block 0, and a
 * `history` key overrides it for its resource.
 */
export function configuredHistory(
  archive: boolean | undefined,
  history: Readonly<Record<string, number | undefined>> | undefined,
): ConfiguredHistory {
  const entries = HISTORY_RESOURCES.map((resource): [HistoryResource, ConfiguredBound | null] => {
    const from = history?.[`${resource}_from`];
    const blocks = history?.[`${resource}_blocks`];
    if (from !== undefined || blocks !== undefined) {
      return [resource, { from: from ?? null, blocks: blocks ?? null }];
    }
    return [resource, archive === true ? { from: 0, blocks: null } : null];
  });
  return Object.fromEntries(entries) as Record<HistoryResource, ConfiguredBound | null>;
}
