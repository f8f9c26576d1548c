import { randomBytes } from "node:crypto";

/**
 * Secret hygiene during the chaos run: the primary's URL carries `${CHAOS_KEY}`, and every
 * byte that leaves the gateway (stdout and stderr lines, EMF metric lines, every answer and
 * its headers, every status document) is scanned for the key's value.
 */

/** A fresh key per run, key-like (long, with digits) as a real provider key is. */
export function newChaosKey(): string {
  return `ck${randomBytes(16).toString("hex")}`;
}

export type ScanSource = "stdout/stderr" | "metrics" | "responses" | "status";

export interface ScanSummary {
  /** Bytes and items scanned per source. */
  readonly scanned: Record<ScanSource, { items: number; bytes: number }>;
  /** Where the key was found (source and a redacted excerpt); empty when clean. */
  readonly leaks: ReadonlyArray<{ source: ScanSource; excerpt: string }>;
}

export class SecretScanner {
  readonly #needles: string[];
  readonly #scanned: ScanSummary["scanned"] = {
    "stdout/stderr": { items: 0, bytes: 0 },
    metrics: { items: 0, bytes: 0 },
    responses: { items: 0, bytes: 0 },
    status: { items: 0, bytes: 0 },
  };
  readonly #leaks: Array<{ source: ScanSource; excerpt: string }> = [];

  constructor(secret: string) {
    this.#needles = [...new Set([secret, encodeURIComponent(secret)])];
  }

  /** `carry` is the end of the previous chunk of a stream, searched with `text` but not counted. */
  scan(source: ScanSource, chunk: string, carry = ""): void {
    const counter = this.#scanned[source];
    counter.items++;
    counter.bytes += Buffer.byteLength(chunk);
    const text = carry + chunk;
    for (const needle of this.#needles) {
      const at = text.indexOf(needle);
      if (at >= 0 && this.#leaks.length < 20) {
        const excerpt = text
          .slice(Math.max(0, at - 60), at + needle.length + 60)
          .split(needle)
          .join("<CHAOS_KEY>");
        this.#leaks.push({ source, excerpt });
      }
    }
  }

  summary(): ScanSummary {
    return {
      scanned: structuredClone(this.#scanned),
      leaks: [...this.#leaks],
    };
  }
}

type Write = typeof process.stdout.write;

export interface OutputCapture {
  /** The last lines written (for diagnostics when a run fails). */
  tail(): string[];
  /** Writes to the real stdout, bypassing the capture. */
  print(text: string): void;
  restore(): void;
}

/**
 * Captures every stdout and stderr write of this process (Powertools logs, EMF lines on the
 * default writer, console output) into the scanner. A key split across two writes is still
 * found: each write is scanned together with the end of the previous one.
 */
export function captureOutput(
  scanner: SecretScanner,
  options: { passThrough: boolean; tailLines?: number; overlap: number },
): OutputCapture {
  const originals: Array<[NodeJS.WriteStream, Write]> = [];
  const tail: string[] = [];
  const keep = options.tailLines ?? 200;
  let previous = "";
  const patch = (stream: NodeJS.WriteStream) => {
    const original = stream.write;
    originals.push([stream, original]);
    const patched = function (this: unknown, chunk: unknown, ...rest: unknown[]): boolean {
      const text =
        typeof chunk === "string"
          ? chunk
          : chunk instanceof Uint8Array
            ? Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString("utf8")
            : String(chunk);
      scanner.scan("stdout/stderr", text, previous);
      previous = text.slice(-options.overlap);
      for (const line of text.split("\n")) {
        if (line.length === 0) continue;
        tail.push(line.length > 500 ? `${line.slice(0, 500)}…` : line);
        if (tail.length > keep) tail.shift();
      }
      if (options.passThrough) {
        return (original as (...args: unknown[]) => boolean).call(stream, chunk, ...rest);
      }
      const callback = rest.find((arg) => typeof arg === "function") as (() => void) | undefined;
      if (callback) queueMicrotask(callback);
      return true;
    };
    stream.write = patched as Write;
  };
  patch(process.stdout);
  patch(process.stderr);
  const stdoutWrite = originals[0]?.[1];
  let restored = false;
  return {
    tail: () => [...tail],
    print(text) {
      if (stdoutWrite) stdoutWrite.call(process.stdout, text);
    },
    restore() {
      if (restored) return;
      restored = true;
      for (const [stream, original] of originals.reverse()) stream.write = original;
    },
  };
}
