import type { IncomingHttpHeaders } from "node:http";
import type { Dispatcher } from "undici";
import undiciSymbols from "undici/lib/core/symbols.js";

/**
 * One HTTP exchange on an undici dispatcher, driven through `dispatch()` with a small handler:
 * one timer for the whole exchange (waiting for a connection, connect, send, headers, body),
 * the answer's bytes capped (refused at once when its Content-Length is over), an optional
 * AbortSignal. When the exchange ends early, undici is told to drop the request and its socket.
 * Never rejects: every way it can end is an outcome. The provider calls and the secrets
 * extension's GETs both go through here.
 */

export interface ExchangeRequest {
  readonly origin: string;
  readonly path: string;
  readonly method: "GET" | "POST";
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
}

export interface ExchangeLimits {
  readonly timeoutMs: number;
  readonly maxBytes: number;
  readonly signal?: AbortSignal | undefined;
}

export type ExchangeOutcome =
  /** A complete answer (1xx interim answers are skipped). */
  | {
      readonly kind: "answer";
      readonly status: number;
      readonly headers: IncomingHttpHeaders;
      readonly body: Buffer;
    }
  /**
   * No complete answer within the time limit. `started`: undici had begun the request; when
   * false it was still waiting for a free connection, so nothing was sent.
   */
  | { readonly kind: "timeout"; readonly started: boolean }
  /** The answer went over `maxBytes` (or said it would). */
  | { readonly kind: "too_large" }
  /** The signal was aborted; `reason` is the signal's. */
  | { readonly kind: "aborted"; readonly reason: unknown }
  /**
   * The transport failed. `answered`: the status line had come, so the body was cut short
   * (a reset, a premature close) rather than the request refused.
   */
  | { readonly kind: "failed"; readonly error: Error; readonly answered: boolean };

export function exchange(
  dispatcher: Dispatcher,
  request: ExchangeRequest,
  limits: ExchangeLimits,
): Promise<ExchangeOutcome> {
  return new Promise<ExchangeOutcome>((resolve) => {
    const { signal, maxBytes } = limits;
    let settled = false;
    let answered = false;
    let controller: Dispatcher.DispatchController | null = null;
    /** Takes the request out of the dispatcher's queue while it waits for a connection. */
    let leaveQueue: ((reason: Error) => void) | null = null;
    /** Set once the exchange is over but undici still holds the request (queued or running). */
    let abandonReason: Error | null = null;
    let status = 0;
    let headers: IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    let size = 0;

    const finish = (outcome: ExchangeOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      resolve(outcome);
    };
    /** Ends the exchange now and tells undici to drop the request and its socket. */
    const abandon = (outcome: ExchangeOutcome, reason: string) => {
      finish(outcome);
      abandonReason = new Error(reason);
      if (controller === null) leaveQueue?.(abandonReason);
      else if (!controller.aborted) controller.abort(abandonReason);
    };
    const onAbort = () =>
      abandon({ kind: "aborted", reason: signal?.reason }, "aborted by the caller");

    const timer = setTimeout(
      () => abandon({ kind: "timeout", started: controller !== null }, "timed out"),
      Math.max(1, Math.floor(limits.timeoutMs)),
    );
    if (signal) {
      if (signal.aborted) {
        onAbort();
        return;
      }
      signal.addEventListener("abort", onAbort, { once: true });
    }

    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(started) {
        controller = started;
        // The exchange ended while undici was handing the request to a connection (too late to
        // leave the queue): nothing is written, but that connection is closed.
        if (abandonReason !== null) started.abort(abandonReason);
      },
      onResponseStart(_controller, statusCode, responseHeaders) {
        if (statusCode < 200) return; // 1xx: the real answer follows
        answered = true;
        const declared = Number(responseHeaders["content-length"]);
        if (Number.isFinite(declared) && declared > maxBytes) {
          abandon({ kind: "too_large" }, "answer over the size limit");
          return;
        }
        status = statusCode;
        headers = responseHeaders;
      },
      onResponseData(_controller, chunk) {
        if (settled) return;
        size += chunk.length;
        if (size > maxBytes) abandon({ kind: "too_large" }, "answer over the size limit");
        else chunks.push(chunk);
      },
      onResponseEnd() {
        const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
        finish({ kind: "answer", status, headers, body });
      },
      onResponseError(_controller, error) {
        finish({ kind: "failed", error, answered });
      },
    };
    try {
      dispatcher.dispatch(
        {
          origin: request.origin,
          path: request.path,
          method: request.method,
          headers: request.headers,
          ...(request.body === undefined ? {} : { body: request.body }),
          // Without it, a request that ended while queued stayed there until a connection was
          // free, and its abort then closed that connection (a healthy keep-alive one).
          [undiciSymbols.kQueuedAbort]: (cancel: (reason: Error) => void) => {
            leaveQueue = cancel;
          },
        } as Dispatcher.DispatchOptions,
        handler,
      );
    } catch (error) {
      finish({
        kind: "failed",
        error: error instanceof Error ? error : new Error(String(error)),
        answered: false,
      });
    }
  });
}
