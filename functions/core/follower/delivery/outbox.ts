import type { ConnectionPush, Telemetry } from "../../ports.ts";
import type { SubscriptionKind } from "../../subscriptions/subscription-records.ts";
import type { Notice } from "./notifications.ts";

/**
 * The notifications of one step of the follower, sent (docs/behaviour.md "Subscriptions over
 * WebSocket", the follower): each connection's messages one after the other, in the order
 * they were added (so every subscription's stream is in chain order), connections side by
 * side, at most `concurrency` at once. A connection whose push fails is a slow or dead
 * consumer: it is closed (when it was not gone already) and forgotten with its subscriptions,
 * and nothing more is sent to it; a connection told of an error it cannot recover from is
 * closed with the reason once its messages are out.
 */

export interface OutboxDeps {
  readonly network: string;
  readonly push: ConnectionPush;
  /** Forgets a connection and every subscription it holds. */
  readonly forget: (connectionId: string) => Promise<void>;
  readonly telemetry: Telemetry;
  readonly concurrency: number;
  /** Connections dropped so far in this run's step: nothing more goes to them. */
  readonly dropped: Set<string>;
}

interface Outgoing {
  readonly text: string;
  readonly kind: SubscriptionKind;
  /** How the metric names it when sent: a result, an error standing for one that did not fit, an error. */
  readonly sort: "ok" | "too_large" | "error";
}

export class Outbox {
  readonly #deps: OutboxDeps;
  readonly #queues = new Map<string, Outgoing[]>();
  readonly #closing = new Map<string, string>();

  constructor(deps: OutboxDeps) {
    this.#deps = deps;
  }

  /** Whether messages may still go to this connection. */
  open(connection: string): boolean {
    return !this.#deps.dropped.has(connection) && !this.#closing.has(connection);
  }

  add(connection: string, kind: SubscriptionKind, notice: Notice): void {
    this.#queue(connection).push({
      text: notice.text,
      kind,
      sort: notice.fits ? "ok" : "too_large",
    });
  }

  /** An error notification, then the connection closed with `reason` (API Gateway's DeleteConnection). */
  fail(connection: string, kind: SubscriptionKind, text: string, reason: string): void {
    this.#queue(connection).push({ text, kind, sort: "error" });
    if (!this.#closing.has(connection)) this.#closing.set(connection, reason);
  }

  /** Closes a connection once its messages are out, without an error notification of its own. */
  close(connection: string, reason: string): void {
    this.#queue(connection);
    if (!this.#closing.has(connection)) this.#closing.set(connection, reason);
  }

  /** Sends everything added; resolves when every connection's messages are out or dropped. */
  async flush(): Promise<void> {
    const connections = [...this.#queues.keys()];
    let next = 0;
    const worker = async () => {
      while (next < connections.length) {
        const connection = connections[next++] as string;
        await this.#send(connection, this.#queues.get(connection) ?? []);
      }
    };
    const workers = Math.max(1, Math.min(this.#deps.concurrency, connections.length));
    await Promise.all(Array.from({ length: workers }, worker));
    this.#queues.clear();
    this.#closing.clear();
  }

  #queue(connection: string): Outgoing[] {
    let queue = this.#queues.get(connection);
    if (queue === undefined) {
      queue = [];
      this.#queues.set(connection, queue);
    }
    return queue;
  }

  async #send(connection: string, messages: readonly Outgoing[]): Promise<void> {
    const { network, push, telemetry, dropped } = this.#deps;
    if (dropped.has(connection)) return;
    for (const message of messages) {
      const outcome = await push
        .post(network, connection, message.text)
        .catch(() => "failed" as const);
      const label = outcome === "ok" ? message.sort : outcome;
      telemetry.count("subscription_notifications", {
        network,
        kind: message.kind,
        outcome: label,
      });
      if (outcome === "ok") continue;
      // A connection gone is a client that left; one that fails is a delivery that failed.
      if (outcome === "failed") telemetry.count("subscription_delivery_failures", { network });
      await this.#drop(
        connection,
        outcome === "gone"
          ? null
          : "the gateway could not deliver a notification to this connection (a slow or broken consumer): reconnect and subscribe again, with resumeFrom to get what was missed",
      );
      return;
    }
    const reason = this.#closing.get(connection);
    if (reason !== undefined) await this.#drop(connection, reason);
  }

  /** Closes (unless gone) and forgets a connection; a failure to do either is logged, not thrown. */
  async #drop(connection: string, reason: string | null): Promise<void> {
    const { network, push, telemetry, dropped, forget } = this.#deps;
    dropped.add(connection);
    try {
      if (reason !== null) await push.close(network, connection, reason);
      await forget(connection);
    } catch (error) {
      telemetry.log("warn", "a subscriber's connection was not closed or forgotten", {
        network,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }
}
