/**
 * Captures everything the process writes to stdout and stderr (Powertools log lines, EMF
 * metrics on the default writer, console output) while a test runs, so the test can assert
 * what did or did not leave the process. Writes still reach the real streams unless
 * `passThrough` is false.
 */
export interface CapturedOutput {
  /** Everything written so far, stdout and stderr interleaved in write order. */
  text(): string;
  /** The captured text split into lines (empty lines dropped). */
  lines(): string[];
  /** Chunks per stream, in write order. */
  readonly stdout: readonly string[];
  readonly stderr: readonly string[];
  /** Puts the original writers back; idempotent. */
  restore(): void;
}

type Write = typeof process.stdout.write;

function chunkText(chunk: unknown, encoding: unknown): string {
  if (typeof chunk === "string") return chunk;
  if (chunk instanceof Uint8Array) {
    return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString(
      typeof encoding === "string" && Buffer.isEncoding(encoding) ? encoding : "utf8",
    );
  }
  return String(chunk);
}

export function captureOutput(options: { passThrough?: boolean } = {}): CapturedOutput {
  const passThrough = options.passThrough ?? true;
  const all: string[] = [];
  const stdout: string[] = [];
  const stderr: string[] = [];
  const originals: Array<[NodeJS.WriteStream, Write]> = [];

  const patch = (stream: NodeJS.WriteStream, sink: string[]) => {
    const original = stream.write;
    originals.push([stream, original]);
    const patched = function (this: unknown, chunk: unknown, ...rest: unknown[]): boolean {
      const text = chunkText(chunk, typeof rest[0] === "string" ? rest[0] : undefined);
      sink.push(text);
      all.push(text);
      if (passThrough)
        return (original as (...args: unknown[]) => boolean).call(stream, chunk, ...rest);
      // Honour the callback contract of write() when the chunk is swallowed.
      const callback = rest.find((arg) => typeof arg === "function") as (() => void) | undefined;
      if (callback) queueMicrotask(callback);
      return true;
    };
    stream.write = patched as Write;
  };
  patch(process.stdout, stdout);
  patch(process.stderr, stderr);

  let restored = false;
  return {
    text: () => all.join(""),
    lines: () =>
      all
        .join("")
        .split("\n")
        .filter((line) => line.length > 0),
    stdout,
    stderr,
    restore() {
      if (restored) return;
      restored = true;
      for (const [stream, original] of originals.reverse()) stream.write = original;
    },
  };
}
