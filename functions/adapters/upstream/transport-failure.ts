import type { TransportFailure } from "../../core/classify/verdict.ts";

/** Network errors (Node's and undici's) as the classifier's three transport kinds. */

/** The error's code, or its cause's (undici wraps socket errors). */
export function errorCode(error: unknown): string {
  if (typeof error !== "object" || error === null) return "";
  const own = (error as { code?: unknown }).code;
  if (typeof own === "string") return own;
  const cause = (error as { cause?: unknown }).cause;
  return cause === undefined ? "" : errorCode(cause);
}

const TIMEOUT_CODES = new Set(["ETIMEDOUT", "ESOCKETTIMEDOUT", "UND_ERR_CONNECT_TIMEOUT"]);

export function transportFailure(error: unknown): TransportFailure {
  const code = errorCode(error);
  const text = error instanceof Error ? error.message : String(error);
  // Node's messages often name their code already ("connect ECONNREFUSED 127.0.0.1:8545").
  const named = code !== "" && text.includes(code) ? "" : code;
  if (TIMEOUT_CODES.has(code) || (error instanceof Error && error.name === "TimeoutError")) {
    return { kind: "timeout", message: `timeout: ${text}` };
  }
  if (
    /^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED|EPROTO)/.test(code) ||
    /\b(tls|ssl)\b/i.test(text)
  ) {
    return { kind: "tls", message: `tls: ${named ? `${named} ` : ""}${text}` };
  }
  return { kind: "connection", message: `connection: ${named ? `${named} ` : ""}${text}` };
}
