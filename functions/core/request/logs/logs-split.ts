import { mergedAnswer, type PieceLogs, pieceLogsOf } from "./logs-merge.ts";
import { alignedPieces, type BlockRange, halves, piecesNeeded, spanOf } from "./logs-range.ts";
import { type LogsRefusal, logsRefusalOf } from "./logs-refusal.ts";

/**
 * One log query served in pieces (docs/behaviour.md §12): cut to the size a provider in use
 * takes, at most `concurrency` pieces in flight, a refused piece cut again (to the cap the
 * provider stated, its hint, or in halves) and served again, until every block of the range
 * has its logs or one piece cannot be served. Knows nothing of providers or HTTP: `serve` runs
 * one piece through the gateway's pipeline.
 */

/** What the pipeline made of one piece. */
export interface PieceAnswer {
  /** The answer text, or null when no provider answered. */
  readonly text: string | null;
  /** The provider whose answer it is (null: none, or an answer from the gateway's cache). */
  readonly provider: string | null;
  /** Why there is no answer, when `text` is null. */
  readonly error: string;
  readonly upstreamCalls: number;
}

export interface SplitDeps {
  /** The piece size to cut `range` to now: its own span when a provider in use takes it whole. */
  readonly pieceSize: (range: BlockRange) => number;
  /** Serves one piece with at most `budget` upstream calls. */
  readonly serve: (piece: BlockRange, budget: number) => Promise<PieceAnswer>;
  /** A provider refused `blocks` or more as a block range: the next pieces of this query fit. */
  readonly learn: (provider: string, blocks: number) => void;
  /**
   * At the end of the query, what it learned of a provider's range, for every container: never
   * under the widest span the provider answered in it.
   */
  readonly share: (provider: string, blocks: number) => void;
  readonly concurrency: number;
  /** Upstream calls the query may make in all. */
  readonly maxUpstreamCalls: number;
  /** Upstream calls one piece may make (its attempts). */
  readonly attemptsPerPiece: number;
  /** The most bytes of logs the answer may carry, as they are and once JSON-escaped. */
  readonly maxBytes: number;
  readonly maxEscapedBytes: number;
  readonly clock: () => number;
  readonly deadline: number;
}

export type SplitOutcome = {
  readonly upstreamCalls: number;
  readonly pieces: number;
} & (
  | /** The provider's own text when one piece was the whole query, else the merged logs. */
  { readonly kind: "logs"; readonly text: string; readonly whole: boolean }
  /** Over the size the gateway can return; `fits` is a first part that does, if one is known. */
  | { readonly kind: "too_large"; readonly fits: BlockRange | null }
  /**
   * More pieces than upstream calls allowed: before any is sent, or once a refusal showed the
   * size the pieces must be.
   */
  | { readonly kind: "too_many_pieces"; readonly needed: number; readonly size: number }
  /**
   * A piece no provider served: the range and why; `code` is the provider's when one answered
   * with an error (else none answered).
   */
  | {
      readonly kind: "failed";
      readonly piece: BlockRange;
      readonly detail: string;
      readonly code: number | null;
    }
  /** The whole query in one piece, answered with an error: the provider's answer, as it is. */
  | { readonly kind: "error_answer"; readonly text: string }
);

interface Piece extends BlockRange {
  /** Times this piece went whole to another provider after a range refusal. */
  readonly retriedWhole: number;
}

/** After this many whole retries of one piece (each to a provider not known to refuse it), halve. */
const MAX_WHOLE_RETRIES = 3;

export async function serveInPieces(query: BlockRange, deps: SplitDeps): Promise<SplitOutcome> {
  const size = Math.max(1, Math.floor(deps.pieceSize(query)));
  const needed = size >= spanOf(query) ? 1 : piecesNeeded(query, size);
  if (needed > deps.maxUpstreamCalls) {
    return { kind: "too_many_pieces", needed, size, upstreamCalls: 0, pieces: 0 };
  }
  const first = (needed === 1 ? [query] : alignedPieces(query, size)).map((range) => ({
    ...range,
    retriedWhole: 0,
  }));
  const run = new PieceRun(query, deps, first);
  await run.finish();
  return run.outcome();
}

class PieceRun {
  readonly #query: BlockRange;
  readonly #deps: SplitDeps;
  /** Pieces to serve, in block order. */
  readonly #pending: Piece[];
  readonly #done: PieceLogs[] = [];
  readonly #inFlight = new Set<Promise<void>>();
  #upstreamCalls = 0;
  #reserved = 0;
  #served = 0;
  #bytes = 0;
  #escapedBytes = 0;
  #wholeText: string | null = null;
  #failure: { piece: BlockRange; detail: string; code: number | null } | null = null;
  #wholeError: string | null = null;
  #tooLarge = false;
  #tooMany: { needed: number; size: number } | null = null;
  /** The widest span each provider answered in this query: no refusal teaches a range under it. */
  readonly #widestAnswered = new Map<string, number>();
  /** The smallest range this query learned of each provider. */
  readonly #learnedHere = new Map<string, number>();

  constructor(query: BlockRange, deps: SplitDeps, first: Piece[]) {
    this.#query = query;
    this.#deps = deps;
    this.#pending = first;
  }

  async finish(): Promise<void> {
    for (;;) {
      while (this.#stillGoing() && this.#inFlight.size < this.#deps.concurrency) {
        const piece = this.#pending.shift();
        if (piece === undefined || !this.#start(piece)) break;
      }
      if (this.#inFlight.size === 0) break;
      await Promise.race(this.#inFlight);
    }
    // Shared only now: a piece answered after a refusal may show the provider takes more than
    // the refusal taught (pieces settle in any order).
    for (const [provider, blocks] of this.#learnedHere) {
      this.#deps.share(provider, Math.max(blocks, this.#widestAnswered.get(provider) ?? 0));
    }
  }

  #stillGoing(): boolean {
    return this.#failure === null && !this.#tooLarge && this.#tooMany === null;
  }

  /**
   * Starts a piece, or fails the query (deadline, calls spent); false when it waits instead:
   * the calls left are held for pieces in flight, which may not need them all.
   */
  #start(piece: Piece): boolean {
    const deps = this.#deps;
    if (deps.clock() >= deps.deadline) {
      this.#failure = { piece, detail: "the request's deadline passed", code: null };
      return true;
    }
    const budget = Math.min(
      deps.attemptsPerPiece,
      deps.maxUpstreamCalls - this.#upstreamCalls - this.#reserved,
    );
    if (budget < 1 && this.#reserved > 0) {
      this.#pending.unshift(piece);
      return false;
    }
    if (budget < 1) {
      this.#failure = {
        piece,
        detail: `max_upstream_calls (${deps.maxUpstreamCalls}) reached before this part was served`,
        code: null,
      };
      return true;
    }
    this.#reserved += budget;
    const running: Promise<void> = deps
      .serve(piece, budget)
      .catch(
        (error: unknown): PieceAnswer => ({
          text: null,
          provider: null,
          error: error instanceof Error ? error.message : String(error),
          upstreamCalls: budget,
        }),
      )
      .then((answer) => {
        this.#reserved -= budget;
        this.#upstreamCalls += answer.upstreamCalls;
        this.#served++;
        this.#settle(piece, answer);
      })
      .finally(() => this.#inFlight.delete(running));
    this.#inFlight.add(running);
    return true;
  }

  #settle(piece: Piece, answer: PieceAnswer): void {
    if (answer.text === null) {
      this.#failure ??= { piece, detail: answer.error, code: null };
      return;
    }
    const logs = pieceLogsOf(answer.text, piece);
    if (logs !== null) {
      if (answer.provider !== null) {
        const widest = this.#widestAnswered.get(answer.provider) ?? 0;
        this.#widestAnswered.set(answer.provider, Math.max(widest, spanOf(piece)));
      }
      this.#done.push(logs);
      if (piece.from === this.#query.from && piece.to === this.#query.to) {
        this.#wholeText = answer.text;
      }
      this.#bytes += logs.bytes;
      this.#escapedBytes += logs.escapedBytes;
      if (this.#bytes > this.#deps.maxBytes || this.#escapedBytes > this.#deps.maxEscapedBytes) {
        this.#tooLarge = true;
      }
      return;
    }
    const refusal = logsRefusalOf(answer.text);
    const error = errorOf(answer.text);
    if (refusal === null) {
      // Asked whole, the query's error answer is the caller's to see as the provider gave it.
      if (spanOf(piece) === spanOf(this.#query) && error !== null) this.#wholeError = answer.text;
      this.#failure ??= { piece, detail: errorDetail(answer, error), code: error?.code ?? null };
      return;
    }
    const again = this.#cutAgain(piece, refusal, answer.provider);
    if (this.#tooMany !== null) return;
    if (again === null) {
      const detail = `${answer.provider ?? "a provider"}: ${refusal.detail}`;
      this.#failure ??= { piece, detail, code: error?.code ?? null };
      return;
    }
    this.#pending.push(...again);
    this.#pending.sort((a, b) => a.from - b.from);
  }

  /** The pieces a refused piece becomes, or null when it cannot be made smaller. */
  #cutAgain(piece: Piece, refusal: LogsRefusal, provider: string | null): Piece[] | null {
    const span = spanOf(piece);
    const fresh = (range: BlockRange): Piece => ({ ...range, retriedWhole: 0 });
    const answered = provider === null ? 0 : (this.#widestAnswered.get(provider) ?? 0);
    // A range refusal of a span no wider than one the provider answered in this query is not
    // about the span (a block it cannot serve, worded as a range): learned, it would shrink the
    // provider's range for a day in every container. The piece is halved, never learned from.
    if (refusal.kind === "range" && span > answered) {
      // A cap stated at or over the span it refused is false: believed, it would shrink the
      // pieces a block per refusal. Halving finds the real one in a few.
      const stated = refusal.limit !== null && refusal.limit < span ? refusal.limit : null;
      const learned = Math.max(stated ?? Math.floor(span / 2), answered);
      if (provider !== null && learned >= 1) {
        this.#deps.learn(provider, learned);
        this.#learnedHere.set(
          provider,
          Math.min(learned, this.#learnedHere.get(provider) ?? learned),
        );
      }
      const size = Math.max(1, Math.floor(this.#deps.pieceSize(piece)));
      if (size < span) {
        // Counted before they are made: a cap of 1 stated against a wide range would make a
        // list of millions of pieces, none of which the upstream calls left could serve.
        const needed = piecesNeeded(this.#query, size);
        if (needed > this.#deps.maxUpstreamCalls) {
          this.#tooMany = { needed, size };
          return null;
        }
        return alignedPieces(piece, size).map(fresh);
      }
      // Another provider in use may take it whole: routing now puts this one after it.
      if (piece.retriedWhole < MAX_WHOLE_RETRIES) {
        return [{ ...piece, retriedWhole: piece.retriedWhole + 1 }];
      }
    }
    const hint = refusal.hint;
    if (hint !== null && hint.from === piece.from && hint.to < piece.to) {
      return [fresh(hint), fresh({ from: hint.to + 1, to: piece.to })];
    }
    return halves(piece)?.map(fresh) ?? null;
  }

  outcome(): SplitOutcome {
    const counts = { upstreamCalls: this.#upstreamCalls, pieces: this.#served };
    if (this.#wholeError !== null)
      return { kind: "error_answer", text: this.#wholeError, ...counts };
    if (this.#failure !== null) return { kind: "failed", ...this.#failure, ...counts };
    if (this.#tooMany !== null) return { kind: "too_many_pieces", ...this.#tooMany, ...counts };
    if (this.#tooLarge) return { kind: "too_large", fits: this.#fittingStart(), ...counts };
    if (this.#wholeText !== null)
      return { kind: "logs", text: this.#wholeText, whole: true, ...counts };
    return { kind: "logs", text: mergedAnswer(this.#done), whole: false, ...counts };
  }

  /** The longest first part of the query, served without a gap, that fits the size limits. */
  #fittingStart(): BlockRange | null {
    const done = [...this.#done].sort((a, b) => a.range.from - b.range.from);
    let next = this.#query.from;
    let bytes = 0;
    let escaped = 0;
    let end: number | null = null;
    for (const piece of done) {
      if (piece.range.from !== next) break;
      bytes += piece.bytes;
      escaped += piece.escapedBytes;
      if (bytes > this.#deps.maxBytes || escaped > this.#deps.maxEscapedBytes) break;
      end = piece.range.to;
      next = piece.range.to + 1;
    }
    return end === null ? null : { from: this.#query.from, to: end };
  }
}

/** The JSON-RPC error an answer carries, or null. */
function errorOf(text: string): { code: number | null; message: string } | null {
  try {
    const error = (JSON.parse(text) as { error?: unknown }).error;
    if (typeof error !== "object" || error === null) return null;
    const { code, message } = error as { code?: unknown; message?: unknown };
    return {
      code: typeof code === "number" && Number.isInteger(code) ? code : null,
      message: typeof message === "string" ? message : "",
    };
  } catch {
    return null;
  }
}

/** An answer that is neither logs nor a refusal: its error, as the provider worded it. */
function errorDetail(
  answer: PieceAnswer,
  error: { code: number | null; message: string } | null,
): string {
  const who = answer.provider ?? "the gateway";
  if (error === null) return `${who}: the answer is not a list of logs`;
  return `${who}: ${error.code ?? "no code"}: ${error.message.replace(/\s+/g, " ").slice(0, 200)}`;
}
