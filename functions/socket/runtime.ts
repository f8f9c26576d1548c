import { randomBytes as cryptoRandomBytes } from "node:crypto";
import type { SubscriptionStore } from "../core/ports.ts";
import { SubscriptionRegistry } from "../core/subscriptions/registry.ts";
import type { ProxyRuntime } from "../proxy/runtime.ts";
import { connect, disconnect, type KnownCaller } from "./connections.ts";
import { message } from "./messages.ts";
import type { WebSocketEvent, WebSocketResult } from "./socket-event.ts";

/**
 * The socket's composition root (docs/behaviour.md "Subscriptions over WebSocket"), used by
 * the Lambda handler and the local stack alike: the proxy's runtime (config, gateway, key
 * limits, telemetry) with the subscription store and registry, serving the WebSocket API's
 * three routes.
 */

export interface SocketRuntimeOptions {
  /** The gateway and its config, as the proxy function holds them. */
  readonly proxy: ProxyRuntime;
  readonly store: SubscriptionStore;
  readonly clock?: () => number;
  /** The subscription ids' random part (default: node:crypto). */
  readonly randomBytes?: (size: number) => Uint8Array;
}

export interface SocketRuntime {
  /** Serves one WebSocket event; may throw (the handler's middlewares answer then). */
  handle(event: WebSocketEvent, remainingMs?: number): Promise<WebSocketResult>;
  readonly proxy: ProxyRuntime;
}

/** Callers remembered per container: a connection's messages then need no read to know theirs. */
const REMEMBERED_CONNECTIONS = 10_000;

export function createSocketRuntime(options: SocketRuntimeOptions): SocketRuntime {
  const clock = options.clock ?? Date.now;
  const { proxy, store } = options;
  const telemetry = proxy.telemetry;
  const registry = new SubscriptionRegistry({
    store,
    clock,
    randomBytes: options.randomBytes ?? cryptoRandomBytes,
    telemetry,
  });
  const callers = new Map<string, KnownCaller>();
  const remember = (network: string, connectionId: string, caller: KnownCaller | null) => {
    const key = `${network}\n${connectionId}`;
    callers.delete(key);
    if (caller === null) return;
    // Oldest out first: a map iterates in insertion order.
    if (callers.size >= REMEMBERED_CONNECTIONS)
      callers.delete(callers.keys().next().value as string);
    callers.set(key, caller);
  };
  const connectionDeps = { proxy, store, clock, telemetry, remember };
  const messageDeps = {
    proxy,
    store,
    registry,
    remembered: (network: string, connectionId: string) =>
      callers.get(`${network}\n${connectionId}`),
    remember,
    telemetry,
  };

  return {
    proxy,
    async handle(event, remainingMs) {
      // The deadline counts from here: loading config spends the caller's time too.
      const startedAt = clock();
      switch (event.requestContext?.eventType) {
        case "CONNECT":
          return connect(event, connectionDeps);
        case "DISCONNECT":
          return disconnect(event, connectionDeps);
        case "MESSAGE":
          return message(event, messageDeps, {
            startedAt,
            ...(remainingMs === undefined ? {} : { remainingMs }),
          });
        default:
          return { statusCode: 400, body: '{"message":"not a WebSocket event"}' };
      }
    },
  };
}
