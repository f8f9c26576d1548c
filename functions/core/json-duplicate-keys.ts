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
  readonly path: ReadonlyArray<string | number>;
  /** Keys seen so far; null for an array. */
  readonly keys: Set<string> | null;
  /** The key (object) or index (array) of the value being read. */
  member: string | number;
}

export function duplicateKeys(text: string): DuplicateKey[] {
  const found: DuplicateKey[] = [];
  const stack: Frame[] = [];
  const childPath = (): ReadonlyArray<string | number> => {
    const top = stack[stack.length - 1];
    return top === undefined ? [] : [...top.path, top.member];
  };
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === "{" || c === "[") {
      stack.push({ path: childPath(), keys: c === "{" ? new Set() : null, member: 0 });
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
        if (top.keys.has(key)) found.push({ path: top.path, key });
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
