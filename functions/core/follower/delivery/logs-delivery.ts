import type { Telemetry } from "../../ports.ts";
import type { ChainBlock, ChainReads } from "../chain-reads.ts";
import { blockKey } from "../cursor.ts";
import {
  type FollowerSettings,
  keptLogsMs,
  logsRetryMs,
  READ_MARGIN_MS,
} from "../follow-settings.ts";
import type { FollowerStore } from "../follower-ports.ts";
import { type BlockLog, logsFor } from "./block-logs.ts";
import { boundedNotification, errorNotification, hexNumber } from "./notifications.ts";
import type { Outbox } from "./outbox.ts";
import type { Followed } from "./subscribers.ts";

/**
 * A delivered block's logs to its `logs` subscribers (docs/behaviour.md "Subscriptions over
 * WebSocket", the follower): one eth_getLogs by the block's hash for every filter, asked
 * again (each time the pipeline walks every provider) until a provider serves it or the
 * delivery bound passes; then each subscriber is told it missed them, and its socket closed.
 * What was sent is kept, for a reorg to send it again as removed.
 */

export interface LogsDeliveryDeps {
  readonly network: string;
  readonly reads: ChainReads;
  readonly store: FollowerStore;
  readonly clock: () => number;
  readonly wait: (ms: number) => Promise<void>;
  readonly telemetry: Telemetry;
  readonly settings: FollowerSettings;
  readonly outbox: () => Outbox;
  /** When the run ends (ms). */
  readonly until: () => number;
  /** How many blocks the cursor remembers (the kept logs live as long as they may be replaced). */
  readonly remembered: () => number;
}

/**
 * "done": sent, or the subscribers told; "replaced": the block is no longer the chain's (the
 * next step's reorg takes it); "stopped": the run ends first (the logs are left pending).
 */
export type LogsOutcome = "done" | "replaced" | "stopped";

export class LogsDelivery {
  readonly #deps: LogsDeliveryDeps;

  constructor(deps: LogsDeliveryDeps) {
    this.#deps = deps;
  }

  /** The block's logs to `takers`, asked since `since` (ms). */
  async deliver(
    block: Pick<ChainBlock, "number" | "hash">,
    takers: readonly Followed[],
    since: number,
  ): Promise<LogsOutcome> {
    const { clock, wait, settings, reads } = this.#deps;
    const filters = takers.map((sub) => sub.filter ?? {});
    for (;;) {
      const answer = await reads.blockLogs(block.hash, filters);
      if (answer.ok) {
        await this.#send(block, takers, answer.logs);
        return "done";
      }
      const now = clock();
      if (now - since >= settings.deliveryTimeoutMs) {
        await this.#undeliverable(block, takers, answer.detail);
        return "done";
      }
      if (now + logsRetryMs(settings) + READ_MARGIN_MS >= this.#deps.until()) return "stopped";
      const again = await reads.blocks([block.number]);
      const there = again?.get(block.number);
      if (there != null && there.hash !== block.hash) return "replaced";
      await wait(logsRetryMs(settings));
    }
  }

  async #send(
    block: Pick<ChainBlock, "number" | "hash">,
    takers: readonly Followed[],
    logs: readonly BlockLog[],
  ): Promise<void> {
    const { network, store, clock, settings, telemetry } = this.#deps;
    const outbox = this.#deps.outbox();
    const sent = new Map<number, string>();
    for (const sub of takers) {
      for (const log of logsFor(logs, sub.filter)) {
        const what = `the log ${hexNumber(log.index)} of block ${hexNumber(block.number)}`;
        outbox.add(sub.connection, "logs", boundedNotification(sub.id, log.text, what));
        sent.set(log.index, log.text);
      }
    }
    await outbox.flush();
    if (sent.size === 0) return;
    const key = { number: block.number, key: blockKey(block.hash) };
    const expiresAt = clock() + keptLogsMs(settings, this.#deps.remembered());
    await store.keepLogs(network, key, [...sent.values()], expiresAt).catch((error: unknown) => {
      telemetry.log(
        "warn",
        "the logs sent of a block were not kept: a reorg cannot send them as removed",
        {
          network,
          block: block.number,
          error: error instanceof Error ? error.message : String(error),
        },
      );
    });
  }

  async #undeliverable(
    block: Pick<ChainBlock, "number" | "hash">,
    takers: readonly Followed[],
    detail: string,
  ): Promise<void> {
    const { network, telemetry, settings } = this.#deps;
    const number = hexNumber(block.number);
    const seconds = Math.round(settings.deliveryTimeoutMs / 1000);
    const outbox = this.#deps.outbox();
    for (const sub of takers) {
      const message = `the logs of block ${number} (${block.hash}) could not be read from any provider within ${seconds} s (${detail}): this subscription did not get them; subscribe again with resumeFrom ${hexNumber(block.number - 1)} to have them`;
      outbox.fail(
        sub.connection,
        "logs",
        errorNotification(sub.id, message),
        `logs of block ${number} undeliverable`,
      );
    }
    await outbox.flush();
    telemetry.count("subscription_delivery_failures", { network }, takers.length);
    telemetry.log(
      "error",
      "a block's logs were not delivered: no provider served them within the bound",
      {
        network,
        block: block.number,
        subscriptions: takers.length,
        detail,
      },
    );
  }
}

/** The `logs` subscriptions a block's pending logs go to: live ones, sent its header. */
export function pendingTakers(subs: readonly Followed[], number: number): Followed[] {
  return subs.filter(
    (sub) =>
      sub.kind === "logs" && sub.live === true && (sub.firstBlock ?? sub.nextBlock) <= number,
  );
}
