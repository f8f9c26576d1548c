/**
 * What counts as a JSON-RPC answer (docs/behaviour.md §4.3): the envelope test that separates
 * a node's answer from a proxy's error page or a bare error object.
 */

export type Envelope = Readonly<Record<string, unknown>> & { readonly id: unknown };

export function isRecord(value: unknown): value is Readonly<Record<string, unknown>> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * A response object: an `id` (possibly null) with a `result` or an `error`. `jsonrpc` may be
 * absent (JSON-RPC 1.0, as Bitcoin Core answers) but when present must name a version.
 * `{message}`, `{error: …}` without an id, and an id with neither member are not answers.
 */
export function isEnvelope(value: unknown): value is Envelope {
  if (!isRecord(value) || !Object.hasOwn(value, "id")) return false;
  const { id, jsonrpc } = value;
  const idOk = id === null || typeof id === "string" || typeof id === "number";
  const versionOk = jsonrpc === undefined || jsonrpc === "2.0" || jsonrpc === "1.0";
  return idOk && versionOk && (Object.hasOwn(value, "result") || Object.hasOwn(value, "error"));
}

/** One envelope, or a non-empty array of them (a batch); `[]`, `null` or a string are not. */
export function isJsonRpcAnswer(parsed: unknown): boolean {
  return (
    isEnvelope(parsed) || (Array.isArray(parsed) && parsed.length > 0 && parsed.every(isEnvelope))
  );
}

/** The envelope's error, when it carries one (`error: null` beside a result is JSON-RPC 1.0). */
export function errorOf(envelope: Envelope): unknown {
  return envelope.error ?? undefined;
}
