import type { Network } from "../../config/network-model.ts";
import { methodMatches } from "../../jsonrpc/jsonrpc.ts";
import { isKnownMethod } from "../../methods/catalogue.ts";
import { SERVED_METHODS_REMEMBERED } from "../../policies.ts";

/**
 * Which methods some provider of a network may serve (docs/behaviour.md §4.10): a standard or
 * common method of the catalogue, a method the config names (an allow list, a
 * `priority_match` key), or one a provider has answered in this container. Only these may
 * become per-method capability blacklists, and a "method not found" for any other name is
 * the caller's, from the first provider: a caller inventing names must not grow the shared
 * state or cost more than one upstream call.
 */
export class ServableMethods {
  /** Methods providers answered, per network; bounded, since answers cannot be forged. */
  readonly #answered = new Map<string, Set<string>>();

  servable(network: Network, method: string): boolean {
    if (isKnownMethod(method)) return true;
    if (this.#answered.get(network.name)?.has(method)) return true;
    const allow = network.settings.methods_allow;
    if (allow !== undefined && methodMatches(method, allow)) return true;
    return network.providers.some(
      (provider) =>
        (provider.methodsAllow !== undefined && methodMatches(method, provider.methodsAllow)) ||
        provider.priorityMatch.some(([needle]) => needle === method),
    );
  }

  /** A provider answered `method`: it is served on this network. */
  answered(network: Network, method: string): void {
    if (isKnownMethod(method)) return;
    let methods = this.#answered.get(network.name);
    if (methods === undefined) {
      methods = new Set();
      this.#answered.set(network.name, methods);
    }
    if (methods.size < SERVED_METHODS_REMEMBERED) methods.add(method);
  }
}
