import type { Provider } from "../config/network-model.ts";
import { boundOf, type HistoryView } from "../routing/history-routing.ts";
import type { BoundSource } from "./bounds.ts";
import { HISTORY_RESOURCES, type HistoryResource } from "./resources.ts";

/**
 * A provider's history on the status route (docs/behaviour.md §16.6): per resource the oldest
 * block it keeps as routing sees it now, where that came from and why, and its last probe.
 */
export interface HistoryStatus {
  /**
   * Per resource: `from`, the oldest block kept (null: it serves none), with its `source` and
   * `why` (both null: nothing is known, and it is taken to keep everything); blocks from `from`
   * up to below `asked_last_below` it likely lacks, and is asked only after those that may keep
   * them (null: no such blocks).
   */
  readonly bounds: Readonly<
    Record<
      HistoryResource,
      {
        readonly from: number | null;
        readonly source: BoundSource | null;
        readonly why: string | null;
        readonly asked_last_below: number | null;
        readonly asked_last_why: string | null;
      }
    >
  >;
  readonly probe: {
    readonly at: string;
    readonly capabilities: "supported" | "unsupported" | "unknown";
    readonly detail: string;
  } | null;
}

export function historyStatus(provider: Provider, view: HistoryView): HistoryStatus {
  const bounds = Object.fromEntries(
    HISTORY_RESOURCES.map((resource) => {
      const bound = boundOf(provider, resource, view);
      const doubt = bound.likelyFrom > bound.from;
      return [
        resource,
        {
          from: bound.source === null || !Number.isFinite(bound.from) ? null : bound.from,
          source: bound.source,
          why: bound.why,
          asked_last_below: doubt ? bound.likelyFrom : null,
          asked_last_why: doubt ? bound.likelyWhy : null,
        },
      ];
    }),
  ) as HistoryStatus["bounds"];
  const probe = view.state.history.get(provider.name)?.probe ?? null;
  return {
    bounds,
    probe:
      probe === null
        ? null
        : {
            at: new Date(probe.at).toISOString(),
            capabilities: probe.capabilities,
            detail: probe.detail,
          },
  };
}
