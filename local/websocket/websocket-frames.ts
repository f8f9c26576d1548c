/**
 * API Gateway's 32 KB frame quota on what a client sends (a larger frame closes the connection
 * with 1009, even inside a message under 128 KB). `ws` bounds whole messages only, so this
 * reads the frame headers (RFC 6455 §5.2) off the raw socket beside it, skipping payloads:
 * a small state machine over the bytes as they arrive, in chunks of any size.
 */
export class FrameSizeWatch {
  readonly #limit: number;
  /** Header bytes gathered so far (at most 14: 2, an extended length of 8, a mask of 4). */
  #header: number[] = [];
  /** Payload bytes still to skip before the next header. */
  #skip = 0;
  #tripped = false;

  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Reads a chunk; true once a frame over the limit was seen (and from then on). */
  over(chunk: Buffer): boolean {
    let index = 0;
    while (index < chunk.length && !this.#tripped) {
      if (this.#skip > 0) {
        const skipped = Math.min(this.#skip, chunk.length - index);
        this.#skip -= skipped;
        index += skipped;
        continue;
      }
      this.#header.push(chunk[index] as number);
      index++;
      const length = frameLength(this.#header);
      if (length === null) continue;
      this.#header = [];
      if (length > this.#limit) this.#tripped = true;
      else this.#skip = length;
    }
    return this.#tripped;
  }
}

/** The payload length once the whole header is in, else null (more bytes needed). */
function frameLength(header: readonly number[]): number | null {
  if (header.length < 2) return null;
  const second = header[1] as number;
  const masked = (second & 0x80) !== 0;
  const short = second & 0x7f;
  const extended = short === 126 ? 2 : short === 127 ? 8 : 0;
  const total = 2 + extended + (masked ? 4 : 0);
  if (header.length < total) return null;
  if (extended === 0) return short;
  let length = 0;
  for (let offset = 2; offset < 2 + extended; offset++) {
    length = length * 256 + (header[offset] as number);
  }
  return length;
}
