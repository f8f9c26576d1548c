import type { Network } from "../core/config/network-model.ts";
import { ErrorCode, parseRequest } from "../core/jsonrpc/jsonrpc.ts";
import type { SubscriptionStore, Telemetry } from "../core/ports.ts";
import type { RpcOptions } from "../core/request/gateway.ts";
import { keyStillServes } from "../core/subscriptions/key-standing.ts";
import type { SocketConnection, SubscriptionRegistry } from "../core/subscriptions/registry.ts";
import {
  assembleWithinLimit,
  errorForEveryCall,
  planMessage,
  withinMessageLimit,
} from "../core/subscriptions/socket-message.ts";
import type { ProxyRuntime } from "../proxy/runtime.ts";
import type { KnownCaller } from "./connections.ts";
import { messageBody, type WebSocketEvent, type WebSocketResult } from "./socket-event.ts";

/**
 * `$default`: one message of JSON-RPC (a call or a batch) from a registered connection
 * (docs/behaviour.md "Subscriptions over WebSocket"). Every call but `eth_subscribe` and
 * `eth_unsubscribe` goes through the same pipeline as HTTP (routing, cache, served head,
 * limits, the caller's key); those two the registry answers. The reply is the route's
 * response, within API Gateway's 128 KB; a refusal answers each call by its id, so the client
 * is not left waiting for an answer that never comes.
 */

export interface MessageDeps {
  readonly proxy: ProxyRuntime;
  readonly store: SubscriptionStore;
  readonly registry: SubscriptionRegistry;
  /** The caller remembered for a connection in this container, if any. */
  readonly remembered: (network: string, connectionId: string) => KnownCaller | undefined;
  readonly remember: (network: string, connectionId: string, caller: KnownCaller | null) => void;
  readonly telemetry: Telemetry;
}

const NOT_SERVED =
  "the API key this connection was opened with is no longer accepted: reconnect with a valid key";
const BLOCK_NUMBER = '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}';

export async function message(
  event: WebSocketEvent,
  deps: MessageDeps,
  timing: RpcOptions,
): Promise<WebSocketResult> {
  const body = messageBody(event);
  const { model } = await deps.proxy.current();
  const { stage, connectionId } = event.requestContext;
  const network = model.networks.get(stage);
  const request = parseRequest(body, limitsOf(network));
  const reply = (text: string): WebSocketResult =>
    text === ""
      ? { statusCode: 200 }
      : { statusCode: 200, body: withinMessageLimit(text, request) };
  if (network === undefined) {
    return reply(
      errorForEveryCall(
        request,
        ErrorCode.invalidRequest,
        `unknown network "${stage.slice(0, 64)}"; configured: ${[...model.networks.keys()].join(", ")}`,
      ),
    );
  }
  let connection: SocketConnection = { id: connectionId, caller: "" };
  if (model.apiKeys.length > 0) {
    const known = await callerOf(stage, connectionId, deps);
    if ("code" in known) return reply(errorForEveryCall(request, known.code, known.message));
    connection = {
      id: connectionId,
      caller: known.name,
      ...(known.keySha256 === undefined ? {} : { keySha256: known.keySha256 }),
    };
    // A key removed, or given a new hash under its name (rotated), no longer serves what it
    // opened: the connection is dropped, its subscriptions with it, and its slot freed.
    if (!keyStillServes(connection, model.apiKeys)) {
      await drop(stage, connectionId, deps);
      return reply(errorForEveryCall(request, ErrorCode.unauthorized, NOT_SERVED));
    }
    const refusal = await deps.proxy.admitCaller(stage, connection.caller);
    if (refusal !== null) {
      const code =
        refusal.reason === "unknown_key" ? ErrorCode.unauthorized : ErrorCode.limitExceeded;
      return reply(errorForEveryCall(request, code, refusal.message));
    }
  }
  const caller = connection.caller;
  const options: RpcOptions = { ...timing, ...(caller === "" ? {} : { caller }) };
  const plan = planMessage(request);
  if (plan.kind === "pipeline") {
    return reply((await deps.proxy.gateway.handleRpc(stage, body, options)).body);
  }
  // One read of the served head for every subscription of the message.
  let headRead: Promise<number> | undefined;
  const head = () => {
    headRead ??= servedHead(deps.proxy, stage, options);
    return headRead;
  };
  const registryAnswers = new Map<number, string | null>();
  // In order: a batch that subscribes past a bound is refused from the call that crosses it.
  for (const member of plan.members) {
    if (member.route !== "registry") continue;
    registryAnswers.set(
      member.position,
      await deps.registry.answer(network, connection, member.call, head),
    );
  }
  const piped =
    plan.pipelineBody === null
      ? ""
      : (await deps.proxy.gateway.handleRpc(stage, plan.pipelineBody, options)).body;
  return reply(assembleWithinLimit(plan, registryAnswers, piped));
}

/** Forgets a connection its key no longer serves; one that stays is left for its expiry. */
async function drop(network: string, connectionId: string, deps: MessageDeps): Promise<void> {
  deps.remember(network, connectionId, null);
  try {
    await deps.store.disconnect(network, connectionId);
  } catch (error) {
    deps.telemetry.log("warn", "connection not removed", {
      network,
      error: error instanceof Error ? error.message : String(error),
    });
  }
}

/** The network's own request limits, or the defaults' for a network the config lacks. */
function limitsOf(network: Network | undefined) {
  const settings = network?.settings;
  return {
    maxBodyBytes: settings?.max_body_bytes ?? Number.POSITIVE_INFINITY,
    maxBatch: settings?.max_batch ?? Number.POSITIVE_INFINITY,
    ...(settings ? { maxDepth: settings.max_json_depth } : {}),
  };
}

/** The key a connection was opened with: remembered here, else read from its record. */
async function callerOf(
  network: string,
  connectionId: string,
  deps: MessageDeps,
): Promise<KnownCaller | { readonly code: number; readonly message: string }> {
  const remembered = deps.remembered(network, connectionId);
  if (remembered !== undefined) return remembered;
  let record: Awaited<ReturnType<SubscriptionStore["connection"]>>;
  try {
    record = await deps.store.connection(network, connectionId);
  } catch {
    return {
      code: ErrorCode.internal,
      message: "this connection's API key cannot be checked right now: try again",
    };
  }
  if (record === null) {
    return {
      code: ErrorCode.unauthorized,
      message: "this connection is no longer registered (it expired or was dropped): reconnect",
    };
  }
  const known = {
    name: record.caller,
    ...(record.keySha256 === undefined ? {} : { keySha256: record.keySha256 }),
  };
  deps.remember(network, connectionId, known);
  return known;
}

/**
 * The served head a new subscription starts after: the network's `eth_blockNumber` through the
 * pipeline, as every caller gets it (the served head's, when there is one).
 */
async function servedHead(
  proxy: ProxyRuntime,
  network: string,
  options: RpcOptions,
): Promise<number> {
  const answer = await proxy.gateway.handleRpc(network, BLOCK_NUMBER, options);
  const parsed: unknown = JSON.parse(answer.body);
  const result = (parsed as { result?: unknown } | null)?.result;
  if (typeof result !== "string" || !/^0x[0-9a-fA-F]{1,16}$/.test(result)) {
    throw new Error(`the chain's head could not be read (${answer.status})`);
  }
  return Number.parseInt(result.slice(2), 16);
}
