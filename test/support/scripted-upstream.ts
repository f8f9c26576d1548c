import type { Upstream, UpstreamRequest, UpstreamResult } from "../../functions/core/ports.ts";
import { HEAD_POLL_BODY } from "../../functions/core/request/head/head-publication.ts";

/**
 * What a scripted provider does with one request: a result at once, or a promise of one whose
 * resolution the test controls (see `held`).
 */
export type Script = (
  request: UpstreamRequest,
  call: number,
) => UpstreamResult | Promise<UpstreamResult>;

/** An answer the test hands over when it chooses: `script` holds every request until `release`. */
export interface Held {
  readonly script: Script;
  /** Requests held so far. */
  readonly waiting: number;
  /** Resolves the oldest held request with this result. */
  release(result: UpstreamResult): void;
}

export function held(): Held {
  const queue: Array<(result: UpstreamResult) => void> = [];
  return {
    script: () => new Promise((resolve) => queue.push(resolve)),
    get waiting() {
      return queue.length;
    },
    release(result) {
      const next = queue.shift();
      if (next === undefined) throw new Error("no request is held");
      next(result);
    },
  };
}

/** A JSON-RPC answer with HTTP 200 that took `elapsedMs`. */
export function answer(body: string, elapsedMs = 5, status = 200): UpstreamResult {
  return { ok: true, status, body, elapsedMs };
}

export function refused(elapsedMs = 1): UpstreamResult {
  return {
    ok: false,
    failure: { kind: "connection", message: "connection: ECONNREFUSED" },
    elapsedMs,
  };
}

/** One call as a provider received it. */
export interface SentCall {
  readonly id: unknown;
  readonly method: string;
  readonly params: unknown[];
}

/** Echoes each call of the request with `result`, keeping its id (single or batch). */
export function resultFor(result: (method: string, call: SentCall) => unknown): Script {
  return (request) => {
    const parsed = JSON.parse(request.body) as SentCall | SentCall[];
    const one = (call: SentCall) =>
      JSON.stringify({ jsonrpc: "2.0", id: call.id, result: result(call.method, call) });
    return answer(Array.isArray(parsed) ? `[${parsed.map(one).join(",")}]` : one(parsed));
  };
}

/**
 * A fake upstream whose providers (by URL) follow scripts, counting the calls each got, as
 * viem's fallback tests count calls per server. Time is the test's: a script's `elapsedMs`
 * is what the gateway sees, and `advance` moves the test clock by it. A request whose signal
 * aborts while its script's promise is pending ends at once, as the real adapter ends it: a
 * connection failure the caller asked for, listed in `aborted`.
 */
export class ScriptedUpstream implements Upstream {
  readonly #scripts = new Map<string, Script>();
  readonly calls = new Map<string, UpstreamRequest[]>();
  readonly aborted: UpstreamRequest[] = [];
  readonly #advance: (ms: number) => void;

  constructor(advance: (ms: number) => void = () => undefined) {
    this.#advance = advance;
  }

  script(url: string, script: Script): this {
    this.#scripts.set(url, script);
    return this;
  }

  /** Calls sent to `url`; with `headPolls: false`, not the gateway's own head polls. */
  callsTo(url: string, options: { readonly headPolls?: boolean } = {}): number {
    const calls = this.calls.get(url) ?? [];
    if (options.headPolls !== false) return calls.length;
    return calls.filter((request) => request.body !== HEAD_POLL_BODY).length;
  }

  bodiesTo(url: string): string[] {
    return (this.calls.get(url) ?? []).map((request) => request.body);
  }

  async send(request: UpstreamRequest): Promise<UpstreamResult> {
    const seen = this.calls.get(request.url) ?? [];
    seen.push(request);
    this.calls.set(request.url, seen);
    const script = this.#scripts.get(request.url);
    const outcome = script ? script(request, seen.length) : refused();
    const result =
      outcome instanceof Promise ? await this.#unlessAborted(request, outcome) : outcome;
    this.#advance(result.elapsedMs);
    return result;
  }

  #unlessAborted(
    request: UpstreamRequest,
    pending: Promise<UpstreamResult>,
  ): Promise<UpstreamResult> {
    const { signal } = request;
    if (signal === undefined) return pending;
    return new Promise((resolve) => {
      const onAbort = () => {
        this.aborted.push(request);
        resolve({
          ok: false,
          failure: { kind: "connection", message: "aborted by the caller" },
          elapsedMs: 0,
        });
      };
      if (signal.aborted) {
        onAbort();
        return;
      }
      signal.addEventListener("abort", onAbort, { once: true });
      void pending.then((result) => {
        signal.removeEventListener("abort", onAbort);
        resolve(result);
      });
    });
  }
}
