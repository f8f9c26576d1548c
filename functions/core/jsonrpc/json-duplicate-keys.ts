/**
 * Keys written twice in one JSON object. JSON.parse keeps the last silently, so a config
 * where a merge kept both edits of a network (or of one setting) would lose the first
 * without a word. The text must already be valid JSON (JSON.parse passed).
 */

export interface DuplicateKey {
  /** Where the object is: its keys and array indexes from the root. */
  readonly path: ReadonlyArray<string | number>;
  readonly key: string;
}

interface Frame {
  /** Keys seen so far; null for an array. */
  readonly keys: Set<string> | null;
  /** The key (object) or index (array) of the value being read. */
  member: string | number;
}

/** Enough to fix the config by; each repeat's path costs its depth to build. */
const MAX_REPORTED = 20;

/** The first `MAX_REPORTED` repeats, in the order they are written. */
export function duplicateKeys(text: string): DuplicateKey[] {
  const found: DuplicateKey[] = [];
  const stack: Frame[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === "{" || c === "[") {
      stack.push({ keys: c === "{" ? new Set() : null, member: 0 });
      i++;
    } else if (c === "}" || c === "]") {
      stack.pop();
      i++;
    } else if (c === ",") {
      const top = stack[stack.length - 1];
      if (top !== undefined && top.keys === null) top.member = (top.member as number) + 1;
      i++;
    } else if (c === '"') {
      const end = stringEnd(text, i);
      const top = stack[stack.length - 1];
      if (top?.keys && isKey(text, end)) {
        const key = JSON.parse(text.slice(i, end)) as string;
        if (top.keys.has(key)) {
          found.push({ path: pathTo(stack), key });
          if (found.length === MAX_REPORTED) return found;
        }
        top.keys.add(key);
        top.member = key;
      }
      i = end;
    } else {
      i++;
    }
  }
  return found;
}

/**
 * Where the innermost open value is. Built only for a repeat: a path kept by every frame cost
 * a copy per level, so a config nested 50,000 deep ran the scan out of memory.
 */
function pathTo(stack: readonly Frame[]): Array<string | number> {
  return stack.slice(0, -1).map((frame) => frame.member);
}

function stringEnd(text: string, start: number): number {
  let i = start + 1;
  while (i < text.length) {
    const c = text[i];
    if (c === "\\") i += 2;
    else if (c === '"') return i + 1;
    else i++;
  }
  return text.length;
}

/** A string inside an object is a key when a `:` follows it. */
function isKey(text: string, end: number): boolean {
  let i = end;
  while (i < text.length && /\s/.test(text[i] as string)) i++;
  return text[i] === ":";
}
