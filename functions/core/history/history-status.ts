import type { Provider } from "../config/network-model.ts";
import { boundOf, type HistoryView } from "../routing/history-routing.ts";
import type { BoundSource } from "./bounds.ts";
import { HISTORY_RESOURCES, type HistoryResource } from "./resources.ts";

/**
 * A provider's history on the status route (docs/behaviour.md §15.6): per resource the oldest
 * block it keeps as routing sees it now, where that came from and why, and its last probe.
 */
export interface HistoryStatus {
  /**
   * `from` null with a `source`: it serves none of the resource; both null: nothing is known,
   * and it is taken to keep everything.
   */
  readonly bounds: Readonly<
    Record<
      HistoryResource,
      {
        readonly from: number | null;
        readonly source: BoundSource | null;
        readonly why: string | null;
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
      return [
        resource,
        bound === null
          ? { from: null, source: null, why: null }
          : {
              from: Number.isFinite(bound.from) ? bound.from : null,
              source: bound.source,
              why: bound.why,
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
