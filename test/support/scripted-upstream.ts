import type { Upstream, UpstreamRequest, UpstreamResult } from "../../functions/core/ports.ts";

/** What a scripted provider does with one request. */
export type Script = (request: UpstreamRequest, call: number) => UpstreamResult;

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

/** Echoes each call of the request with `result`, keeping its id (single or batch). */
export function resultFor(result: (method: string) => unknown): Script {
  return (request) => {
    const parsed = JSON.parse(request.body) as
      | { id: unknown; method: string }
      | Array<{ id: unknown; method: string }>;
    const one = (call: { id: unknown; method: string }) =>
      JSON.stringify({ jsonrpc: "2.0", id: call.id, result: result(call.method) });
    return answer(Array.isArray(parsed) ? `[${parsed.map(one).join(",")}]` : one(parsed));
  };
}

/**
 * A fake upstream whose providers (by URL) follow scripts, counting the calls each got, as
 * viem's fallback tests count calls per server. Time is the test's: a script's `elapsedMs`
 * is what the gateway sees, and `advance` moves the test clock by it.
 */
export class ScriptedUpstream implements Upstream {
  readonly #scripts = new Map<string, Script>();
  readonly calls = new Map<string, UpstreamRequest[]>();
  readonly #advance: (ms: number) => void;

  constructor(advance: (ms: number) => void = () => undefined) {
    this.#advance = advance;
  }

  script(url: string, script: Script): this {
    this.#scripts.set(url, script);
    return this;
  }

  callsTo(url: string): number {
    return this.calls.get(url)?.length ?? 0;
  }

  bodiesTo(url: string): string[] {
    return (this.calls.get(url) ?? []).map((request) => request.body);
  }

  async send(request: UpstreamRequest): Promise<UpstreamResult> {
    const seen = this.calls.get(request.url) ?? [];
    seen.push(request);
    this.calls.set(request.url, seen);
    const script = this.#scripts.get(request.url);
    const result = script ? script(request, seen.length) : refused();
    this.#advance(result.elapsedMs);
    return result;
  }
}
