import { ALREADY_KNOWN } from "../../classify/classify-patterns.ts";
import type { Settings } from "../../config/config-schema.ts";
import type { Provider } from "../../config/network-model.ts";
import { parseJsonOrUndefined, withId } from "../../jsonrpc/json-raw.ts";
import {
  BROADCAST_DELAY_MS,
  BROADCAST_WAIT_MS,
  LEDGER_CLAIMS_PER_REQUEST,
} from "../../policies.ts";
import type { LedgerEntry, Telemetry, TransactionLedger, Upstream, Wait } from "../../ports.ts";
import type { GuardCounts } from "../../status/guards.ts";
import type { OpenCall } from "../vocabulary.ts";
import { SEND_RAW_TRANSACTION } from "./sent-transactions.ts";
import { readRawTransaction } from "./transactions.ts";

/**
 * Sending a transaction once, everywhere (docs/behaviour.md §4.12): the ledger gives a client
 * that sends the same transaction again (through any container) the first sender's outcome;
 * the transaction goes to the top provider through the normal attempts and, shortly after, to
 * `broadcast_to` other providers at once, so it reaches more than one mempool.
 */

export interface Send {
  readonly entry: OpenCall;
  readonly hash: string;
  /** This request records the outcome in the ledger (it claimed the hash, or it was refused). */
  readonly claimed: boolean;
  /** A provider accepted it before: answered with its hash, sent again only to spread it. */
  readonly resend: boolean;
}

function hashAnswer(hash: string): string {
  return `{"jsonrpc":"2.0","id":null,"result":"${hash}"}`;
}

/**
 * The request's sends, claimed in the ledger: a transaction a provider already accepted is
 * answered with its hash at once, whatever the providers now say of it (already known, nonce
 * too low), and still sent again, as a client resends one it fears was dropped. One refused
 * before is sent again and its outcome recorded anew: a refusal need not be final (the account
 * may have been funded since). One another container is sending is sent again too (a node
 * recognises the duplicate by its hash).
 */
async function claimSends(
  open: readonly OpenCall[],
  network: string,
  deps: Pick<SendDeps, "ledger" | "telemetry" | "guards">,
  now: number,
): Promise<Send[]> {
  const sends: Send[] = [];
  let claims = 0;
  for (const entry of open) {
    if (entry.info.method !== SEND_RAW_TRANSACTION) continue;
    const params = entry.info.params;
    const tx = readRawTransaction(Array.isArray(params) ? params[0] : undefined);
    if (tx === null) continue;
    // Any hex is a hash to claim, and a claim is two writes: past the bound, sent unclaimed.
    let ledger = deps.ledger;
    if (ledger !== undefined && claims++ >= LEDGER_CLAIMS_PER_REQUEST) {
      deps.guards.refused(network, "ledger_claims_per_request");
      ledger = undefined;
    }
    const existing = ledger
      ? await claimOrSkip(ledger, network, tx.hash, now, deps.telemetry)
      : null;
    const resend = existing !== "unavailable" && existing?.status === "accepted";
    if (resend) entry.answer = hashAnswer(tx.hash);
    sends.push({
      entry,
      hash: tx.hash,
      claimed:
        ledger !== undefined &&
        existing !== "unavailable" &&
        (existing === null || existing.status === "refused"),
      resend,
    });
  }
  return sends;
}

/**
 * The ledger's entry for a hash, claiming it when there is none; "unavailable" when the ledger
 * cannot be reached (DynamoDB throttling or down): the transaction is then sent as if there
 * were no ledger, since a send must never fail for want of its bookkeeping.
 */
async function claimOrSkip(
  ledger: TransactionLedger,
  network: string,
  hash: string,
  now: number,
  telemetry: Telemetry,
): Promise<LedgerEntry | null | "unavailable"> {
  try {
    return await ledger.claim(network, hash, now);
  } catch (error) {
    telemetry.log("warn", "transaction ledger unreadable: sending without it", {
      network,
      error: error instanceof Error ? error.message : String(error),
    });
    return "unavailable";
  }
}

export interface BroadcastDeps {
  readonly upstream: Upstream;
  readonly wait: Wait;
  readonly settings: Pick<
    Settings,
    "request_timeout_ms" | "max_response_bytes" | "broadcast_to" | "max_upstream_calls"
  >;
}

interface Copy {
  readonly send: Send;
  readonly provider: Provider;
}

/**
 * The copies to send: each open transaction to up to `broadcast_to` providers after the first
 * of its order (a resend of an accepted one also to the first, as no attempt carries it).
 * Copies are upstream calls like any: they come out of `max_upstream_calls`, leaving one per
 * call of the request for its first attempts.
 */
function plannedCopies(
  sends: readonly Send[],
  settings: BroadcastDeps["settings"],
  calls: number,
): Copy[] {
  const copies = sends
    .filter((send) => send.entry.answer === null || send.resend)
    .flatMap((send) =>
      send.entry.order
        .filter((slot) => !slot.emergency)
        .slice(send.resend ? 0 : 1, 1 + settings.broadcast_to)
        .map(({ provider }) => ({ send, provider })),
    );
  return copies.slice(0, Math.max(0, settings.max_upstream_calls - calls));
}

/**
 * Sends the copies shortly after the first attempt left, all at once. Resolves with the hashes
 * some copy got accepted (a result, or "already known"): if the attempts lose every answer,
 * that stands.
 */
async function broadcast(
  copies: readonly Copy[],
  deps: BroadcastDeps,
  signal: AbortSignal,
): Promise<Set<string>> {
  const accepted = new Set<string>();
  if (copies.length === 0) return accepted;
  await deps.wait(BROADCAST_DELAY_MS, signal);
  if (signal.aborted) return accepted;
  await Promise.all(
    copies.map(async ({ send, provider }) => {
      const result = await deps.upstream.send({
        url: provider.url,
        body: withId(send.entry.call.raw, "1"),
        timeoutMs: deps.settings.request_timeout_ms,
        maxResponseBytes: deps.settings.max_response_bytes,
        // A copy of a transaction, recognised by its hash: safe to send again.
        idempotent: true,
        signal,
      });
      if (result.ok && copyAccepted(result.status, result.body, send.hash)) accepted.add(send.hash);
    }),
  );
  return accepted;
}

function copyAccepted(status: number, body: string, hash: string): boolean {
  if (status !== 200) return false;
  try {
    const answer = JSON.parse(body) as { result?: unknown; error?: { message?: unknown } };
    if (typeof answer.result === "string") return answer.result.toLowerCase() === hash;
    const message = answer.error?.message;
    return typeof message === "string" && ALREADY_KNOWN.test(message);
  } catch {
    return false;
  }
}

/**
 * After the attempts: a send no attempt got accepted but a copy did is answered with its hash
 * (it is in a mempool, whatever the others said); then every claimed send's outcome goes to
 * the ledger.
 */
async function settleSends(
  sends: readonly Send[],
  accepted: ReadonlySet<string>,
  network: string,
  ledger: TransactionLedger | undefined,
  scrubAnswer: (text: string) => string,
): Promise<void> {
  for (const { entry, hash } of sends) {
    if (accepted.has(hash) && resultOf(entry.answer ?? entry.fallback?.text ?? "") !== hash) {
      entry.answer = hashAnswer(hash);
    }
  }
  if (ledger === undefined) return;
  await Promise.all(
    sends
      .filter((send) => send.claimed)
      .map(({ entry, hash }) => {
        const answer = entry.answer ?? entry.fallback?.text ?? null;
        const result = answer === null ? undefined : resultOf(answer);
        if (answer === null) return Promise.resolve();
        return ledger.settle(
          network,
          hash,
          result === hash
            ? { status: "accepted" }
            : { status: "refused", answer: scrubAnswer(answer) },
        );
      }),
  );
}

function resultOf(text: string): unknown {
  const answer = parseJsonOrUndefined(text);
  return typeof answer === "object" && answer !== null
    ? (answer as { result?: unknown }).result
    : undefined;
}

export interface SendDeps extends BroadcastDeps {
  readonly ledger?: TransactionLedger;
  /** Where the sends past `LEDGER_CLAIMS_PER_REQUEST` are counted. */
  readonly guards: GuardCounts;
  readonly clock: () => number;
  readonly telemetry: Telemetry;
  /** Masks secret values in an answer (an upstream may echo its own URL) before it is stored. */
  readonly scrubAnswer: (text: string) => string;
}

/** The request's sends under way: `settle` once its attempts are over. */
export interface SendsInFlight {
  /** Upstream calls the copies take from the request's `max_upstream_calls`. */
  readonly copies: number;
  /** Waits for the copies until `deadline` at the latest, then records the outcomes. */
  settle(deadline: number): Promise<void>;
}

/** A request that sends no transaction. */
export const NO_SENDS: SendsInFlight = { copies: 0, settle: async () => undefined };

/**
 * Claims the request's transactions in the ledger and starts their copies to other providers;
 * `settle` waits for the copies at most `BROADCAST_WAIT_MS` (aborting the rest), answers a send
 * a copy got accepted when the attempts could not, and records every outcome.
 */
export async function startSends(
  open: readonly OpenCall[],
  network: string,
  deps: SendDeps,
): Promise<SendsInFlight> {
  const sends = await claimSends(open, network, deps, deps.clock());
  if (sends.length === 0) return NO_SENDS;
  const planned = plannedCopies(sends, deps.settings, open.length);
  const copies = new AbortController();
  const broadcasting = broadcast(planned, deps, copies.signal).catch(() => new Set<string>());
  return {
    copies: planned.length,
    async settle(deadline) {
      const done = new AbortController();
      const waitMs = Math.max(0, Math.min(BROADCAST_WAIT_MS, deadline - deps.clock()));
      const late = deps.wait(waitMs, done.signal).then(() => new Set<string>());
      const accepted = await Promise.race([broadcasting, late]);
      done.abort();
      copies.abort();
      await settleSends(sends, accepted, network, deps.ledger, deps.scrubAnswer).catch(
        (error: unknown) =>
          deps.telemetry.log("warn", "transaction ledger not updated", {
            network,
            error: error instanceof Error ? error.message : String(error),
          }),
      );
    },
  };
}
