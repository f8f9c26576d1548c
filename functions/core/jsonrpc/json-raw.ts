/**
 * Byte-faithful surgery on JSON text that is already known to be valid (JSON.parse passed).
 * The gateway must hand back the upstream's answer unchanged except for `id`s, so it never
 * re-serialises a body: it finds spans in the original text and splices them.
 */

export interface Span {
  readonly start: number;
  readonly end: number;
}

function skipWhitespace(text: string, index: number): number {
  let i = index;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break;
    i++;
  }
  return i;
}

function stringEnd(text: string, start: number): number {
  let i = start + 1;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 0x5c) i += 2;
    else if (c === 0x22) return i + 1;
    else i++;
  }
  return text.length;
}

/** The end (exclusive) of the JSON value starting at `start` (which must not be whitespace). */
export function valueEnd(text: string, start: number): number {
  const first = text.charCodeAt(start);
  if (first === 0x22) return stringEnd(text, start);
  if (first !== 0x7b && first !== 0x5b) {
    let i = start;
    while (i < text.length && !/[\s,\]}]/.test(text[i] as string)) i++;
    return i;
  }
  let depth = 0;
  let i = start;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      i = stringEnd(text, i);
      continue;
    }
    if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) {
      depth--;
      if (depth === 0) return i + 1;
    }
    i++;
  }
  return text.length;
}

/**
 * How deeply arrays and objects nest in a JSON text (0 for a scalar), read without parsing:
 * strings are skipped, so brackets inside them do not count.
 */
export function nestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      i = stringEnd(text, i);
      continue;
    }
    if (c === 0x7b || c === 0x5b) {
      depth++;
      if (depth > deepest) deepest = depth;
    } else if (c === 0x7d || c === 0x5d) depth--;
    i++;
  }
  return deepest;
}

/** Spans of the elements of a top-level JSON array. */
export function arrayElementSpans(text: string): Span[] {
  const spans: Span[] = [];
  let i = skipWhitespace(text, 0);
  if (text[i] !== "[") return spans;
  i = skipWhitespace(text, i + 1);
  if (text[i] === "]") return spans;
  while (i < text.length) {
    const end = valueEnd(text, i);
    spans.push({ start: i, end });
    i = skipWhitespace(text, end);
    if (text[i] !== ",") break;
    i = skipWhitespace(text, i + 1);
  }
  return spans;
}

const SIMPLE_ESCAPES: Record<string, string> = {
  '"': '"',
  "\\": "\\",
  "/": "/",
  b: "\b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
};

/**
 * The text of a JSON string body (between the quotes), decoded. By hand rather than with
 * JSON.parse: plain keys need no work, and V8 13.6 (Node 24) can mis-read later single-character
 * keys after JSON.parse decodes an escaped one.
 */
function decodeJsonString(body: string): string {
  if (!body.includes("\\")) return body;
  return body.replace(/\\(u[0-9a-fA-F]{4}|.)/g, (_, sequence: string) =>
    sequence.length === 5
      ? String.fromCharCode(Number.parseInt(sequence.slice(1), 16))
      : (SIMPLE_ESCAPES[sequence] ?? sequence),
  );
}

/** Calls `visit` with each top-level member of a JSON object text, in order. */
function forEachMember(text: string, visit: (name: string, value: Span) => void): void {
  let i = skipWhitespace(text, 0);
  if (text[i] !== "{") return;
  i = skipWhitespace(text, i + 1);
  while (i < text.length && text[i] === '"') {
    const keyEnd = stringEnd(text, i);
    const name = decodeJsonString(text.slice(i + 1, keyEnd - 1));
    i = skipWhitespace(text, keyEnd);
    if (text[i] !== ":") return;
    const valueStart = skipWhitespace(text, i + 1);
    const end = valueEnd(text, valueStart);
    visit(name, { start: valueStart, end });
    i = skipWhitespace(text, end);
    if (text[i] !== ",") return;
    i = skipWhitespace(text, i + 1);
  }
}

/**
 * The span of the value of top-level key `key` in a JSON object text, or null. When the key
 * appears twice, the last one, as JSON.parse (and most JSON-RPC servers) read it.
 */
export function memberValueSpan(text: string, key: string): Span | null {
  let found: Span | null = null;
  forEachMember(text, (name, span) => {
    if (name === key) found = span;
  });
  return found;
}

/** A top-level member of a JSON object text: its name, decoded, and its value's span. */
export interface Member {
  readonly name: string;
  readonly value: Span;
}

/** The top-level members of a JSON object text in order, duplicates included: one scan. */
export function objectMembers(text: string): Member[] {
  const members: Member[] = [];
  forEachMember(text, (name, value) => members.push({ name, value }));
  return members;
}

/**
 * The object text with its `id` value replaced by `rawId` (JSON text). Unchanged text when
 * the id already reads the same; an object without `id` gets one after its opening brace.
 * Anything but an object is refused: an id spliced into a text page would hand the caller
 * garbage dressed as an answer.
 */
export function withId(objectText: string, rawId: string): string {
  const open = skipWhitespace(objectText, 0);
  if (objectText[open] !== "{") throw new TypeError("withId: the text is not a JSON object");
  const span = memberValueSpan(objectText, "id");
  if (span === null) {
    const rest = objectText.slice(open + 1).trimStart();
    const separator = rest.startsWith("}") ? "" : ",";
    return `${objectText.slice(0, open + 1)}"id":${rawId}${separator}${objectText.slice(open + 1)}`;
  }
  if (objectText.slice(span.start, span.end) === rawId) return objectText;
  return `${objectText.slice(0, span.start)}${rawId}${objectText.slice(span.end)}`;
}

/** The parsed value of a text that may not be JSON (an upstream's body): undefined if it is not. */
export function parseJsonOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
