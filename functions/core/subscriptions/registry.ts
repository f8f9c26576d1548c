import type { Network } from "../config/network-model.ts";
import { ErrorCode, errorResponse, methodRefusal } from "../jsonrpc/jsonrpc.ts";
import type { SubscriptionStore, Telemetry } from "../ports.ts";
import { firstBlockOf } from "./resume.ts";
import { NODE_ERROR, readSubscribe, readUnsubscribe } from "./subscribe-params.ts";
import {
  SUBSCRIPTION_ID_RANDOM_BYTES,
  subscriptionIdFrom,
  subscriptionIdOf,
} from "./subscription-id.ts";
import type {
  SubscribeOutcome,
  SubscriptionBounds,
  SubscriptionRecord,
} from "./subscription-records.ts";
import { CONNECTION_RECORD_MARGIN_MS, WEBSOCKET_MAX_CONNECTION_MS } from "./websocket-quotas.ts";

/**
 * `eth_subscribe` and `eth_unsubscribe`, answered by the gateway itself (docs/behaviour.md
 * "Subscriptions over WebSocket"): the params read as geth reads them, the stream's first
 * block from the served head (or `resumeFrom`), the bounds of the `subscriptions` config held
 * by the store across containers, and geth's answers and errors. The head follower delivers.
 */

export interface RegistryDeps {
  readonly store: SubscriptionStore;
  readonly clock: () => number;
  /** The ids' random part. */
  readonly randomBytes: (size: number) => Uint8Array;
  readonly telemetry: Telemetry;
}

/** The connection a call came on. */
export interface SocketConnection {
  readonly id: string;
  /** The API key's name, or "" without keys. */
  readonly caller: string;
  /** The key's sha-256 at the connect (absent without keys). */
  readonly keySha256?: string;
}

/** One registry call: its method, params and id (null: a notification, answered with nothing). */
export interface RegistryCall {
  readonly method: "eth_subscribe" | "eth_unsubscribe";
  readonly params: unknown;
  readonly rawId: string | null;
}

/** The methods the registry answers; every other goes through the pipeline. */
export function isRegistryMethod(method: string): method is RegistryCall["method"] {
  return method === "eth_subscribe" || method === "eth_unsubscribe";
}

const result = (rawId: string, value: unknown) =>
  `{"jsonrpc":"2.0","id":${rawId},"result":${JSON.stringify(value)}}`;

export class SubscriptionRegistry {
  readonly #deps: RegistryDeps;

  constructor(deps: RegistryDeps) {
    this.#deps = deps;
  }

  /**
   * The answer to one call (null for a notification). `head` reads the served head, only when
   * a subscription is made. Never throws: a store that fails is the caller's -32603.
   */
  async answer(
    network: Network,
    connection: SocketConnection,
    call: RegistryCall,
    head: () => Promise<number>,
  ): Promise<string | null> {
    // The network's deny/allow lists refuse these as any call (docs/behaviour.md §8.2, §15.3).
    const { methods_deny: deny, methods_allow: allow } = network.settings;
    if (methodRefusal(call.method, deny, allow) !== null) {
      return call.rawId === null
        ? null
        : errorResponse(
            call.rawId,
            ErrorCode.methodNotFound,
            `method ${call.method} is not allowed by this gateway`,
          );
    }
    try {
      return call.method === "eth_subscribe"
        ? await this.#subscribe(network, connection, call, head)
        : await this.#unsubscribe(network, connection, call);
    } catch (error) {
      this.#deps.telemetry.log("warn", "subscription call failed", {
        network: network.name,
        method: call.method,
        error: error instanceof Error ? error.message : String(error),
      });
      return errorResponse(
        call.rawId ?? "null",
        ErrorCode.internal,
        `${call.method} could not be served right now: try again`,
      );
    }
  }

  async #subscribe(
    network: Network,
    connection: SocketConnection,
    call: RegistryCall,
    head: () => Promise<number>,
  ): Promise<string | null> {
    // A subscription whose id nobody learns would only cost deliveries.
    if (call.rawId === null) return null;
    const request = readSubscribe(call.params);
    if (!request.ok) return errorResponse(call.rawId, request.error.code, request.error.message);
    const settings = network.settings;
    const first = firstBlockOf(request.value.resumeFrom, {
      head: await head(),
      windowSeconds: settings.subscriptions.resume_window_seconds,
      blockTimeSeconds: settings.block_time_seconds,
    });
    if (!first.ok) return errorResponse(call.rawId, first.error.code, first.error.message);
    const now = this.#deps.clock();
    const record: SubscriptionRecord = {
      id: subscriptionIdOf(this.#deps.randomBytes(SUBSCRIPTION_ID_RANDOM_BYTES)),
      connection: connection.id,
      caller: connection.caller,
      ...(connection.keySha256 === undefined ? {} : { keySha256: connection.keySha256 }),
      kind: request.value.kind,
      filter: request.value.filter,
      nextBlock: first.value,
      firstBlock: first.value,
      live: false,
      // No connection lives longer from now, so neither does what it subscribed.
      expiresAt: now + WEBSOCKET_MAX_CONNECTION_MS + CONNECTION_RECORD_MARGIN_MS,
    };
    const bounds: SubscriptionBounds = {
      perConnection: settings.subscriptions.max_per_connection,
      perKey: settings.subscriptions.max_per_key,
      perNetwork: settings.subscriptions.max_per_network,
    };
    const outcome = await this.#deps.store.subscribe(network.name, record, bounds);
    if (outcome === "ok") return result(call.rawId, record.id);
    this.#deps.telemetry.count("subscription_refusals", { network: network.name, reason: outcome });
    return errorResponse(
      call.rawId,
      refusalCode(outcome),
      refusalMessage(outcome, network, connection, bounds),
    );
  }

  async #unsubscribe(
    network: Network,
    connection: SocketConnection,
    call: RegistryCall,
  ): Promise<string | null> {
    const request = readUnsubscribe(call.params);
    if (!request.ok) {
      return call.rawId === null
        ? null
        : errorResponse(call.rawId, request.error.code, request.error.message);
    }
    const id = subscriptionIdFrom(request.value);
    const removed =
      id !== null && (await this.#deps.store.unsubscribe(network.name, connection.id, id));
    if (call.rawId === null) return null;
    // geth's answer for an id this connection does not hold.
    return removed
      ? result(call.rawId, true)
      : errorResponse(call.rawId, NODE_ERROR, "subscription not found");
  }
}

function refusalCode(outcome: Exclude<SubscribeOutcome, "ok">): number {
  return outcome === "no_connection" ? NODE_ERROR : ErrorCode.limitExceeded;
}

function refusalMessage(
  outcome: Exclude<SubscribeOutcome, "ok">,
  network: Network,
  connection: SocketConnection,
  bounds: SubscriptionBounds,
): string {
  switch (outcome) {
    case "over_connection":
      return `this connection holds its most subscriptions (subscriptions.max_per_connection ${bounds.perConnection}): eth_unsubscribe one first`;
    case "over_key":
      return `API key "${connection.caller}" holds its most subscriptions on ${network.name} (subscriptions.max_per_key ${bounds.perKey}): eth_unsubscribe some first`;
    case "over_network":
      return `${network.name} holds its most subscriptions (subscriptions.max_per_network ${bounds.perNetwork}): try again later`;
    case "no_connection":
      return "this connection is no longer registered (it expired or was dropped): reconnect and subscribe again";
  }
}
