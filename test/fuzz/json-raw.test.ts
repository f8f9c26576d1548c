import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  arrayElementSpans,
  memberValueSpan,
  type Span,
  valueEnd,
  withId,
} from "../../functions/core/jsonrpc/json-raw.ts";
import {
  fuzzParams,
  hostileString,
  jsonKeyText,
  jsonStringText,
  jsonText,
  jsonValue,
  numberText,
  objectKey,
  whitespace,
} from "./arbitraries.ts";

/**
 * The byte-faithful JSON surgery of functions/core/jsonrpc/json-raw.ts, with JSON.parse as the oracle.
 * The texts are serialised here token by token, so the test knows where every value lies and
 * can demand that every byte outside the id is unchanged.
 */

/** Hands out the generated whitespace strings (and escape flags) in turn. */
class Layout {
  readonly #spaces: readonly string[];
  readonly #escapes: readonly boolean[];
  #i = 0;
  #j = 0;
  constructor(spaces: readonly string[], escapes: readonly boolean[]) {
    this.#spaces = spaces;
    this.#escapes = escapes;
  }
  ws(): string {
    const value = this.#spaces[this.#i % Math.max(1, this.#spaces.length)] ?? "";
    this.#i++;
    return value;
  }
  escape(): boolean {
    const value = this.#escapes[this.#j % Math.max(1, this.#escapes.length)] ?? false;
    this.#j++;
    return value;
  }
}

function serialize(value: unknown, layout: Layout): string {
  if (value === null || typeof value === "boolean" || typeof value === "number") {
    return JSON.stringify(value);
  }
  if (typeof value === "string") return jsonStringText(value, layout.escape());
  if (Array.isArray(value)) {
    if (value.length === 0) return `[${layout.ws()}]`;
    return `[${value.map((item) => `${layout.ws()}${serialize(item, layout)}${layout.ws()}`).join(",")}]`;
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0) return `{${layout.ws()}}`;
  return `{${entries
    .map(
      ([key, item]) =>
        `${layout.ws()}${jsonKeyText(key, layout.escape())}${layout.ws()}:${layout.ws()}${serialize(item, layout)}${layout.ws()}`,
    )
    .join(",")}}`;
}

interface ObjectDoc {
  readonly text: string;
  /** Top-level members in text order, each with the span of its value. */
  readonly members: ReadonlyArray<{ key: string; value: unknown; span: Span }>;
}

/** A JSON object text whose top-level value spans are recorded while it is written. */
function serializeObject(
  entries: ReadonlyArray<readonly [string, unknown]>,
  layout: Layout,
): ObjectDoc {
  let text = `${layout.ws()}{`;
  const members: Array<{ key: string; value: unknown; span: Span }> = [];
  if (entries.length === 0) text += layout.ws();
  entries.forEach(([key, value], index) => {
    if (index > 0) text += ",";
    text += `${layout.ws()}${jsonKeyText(key, layout.escape())}${layout.ws()}:${layout.ws()}`;
    const start = text.length;
    text += serialize(value, layout);
    members.push({ key, value, span: { start, end: text.length } });
    text += layout.ws();
  });
  text += `}${layout.ws()}`;
  return { text, members };
}

const layoutArb = fc
  .tuple(
    fc.array(whitespace, { minLength: 1, maxLength: 64 }),
    fc.array(fc.boolean(), { minLength: 1, maxLength: 16 }),
  )
  // A factory, not a Layout: a Layout is stateful and a generated value must not be (fast-check
  // replays values while shrinking).
  .map(
    ([spaces, escapes]) =>
      () =>
        new Layout(spaces, escapes),
  );

/** Values that often hold their own (nested) `id`, to tempt a scanner that does not track depth. */
const memberValue = fc.oneof(
  jsonValue({ maxDepth: 3 }),
  fc.dictionary(fc.constantFrom("id", "method", "result", "x"), jsonValue({ maxDepth: 2 }), {
    maxKeys: 3,
  }),
  fc.array(fc.record({ id: jsonValue({ maxDepth: 1 }) }), { maxLength: 3 }),
  hostileString(12),
);

/** Top-level members with unique keys; an `id` somewhere among them, or none. */
const objectDocArb = fc
  .tuple(
    fc.uniqueArray(fc.tuple(objectKey, memberValue), {
      selector: ([key]) => key,
      maxLength: 8,
    }),
    fc.option(fc.tuple(jsonValue({ maxDepth: 2 }), fc.nat())),
    layoutArb,
  )
  .map(([entries, id, newLayout]) => {
    const others = entries.filter(([key]) => key !== "id");
    const all: Array<readonly [string, unknown]> = [...others];
    if (id !== null) all.splice(id[1] % (others.length + 1), 0, ["id", id[0]]);
    return serializeObject(all, newLayout());
  });

/** New ids as JSON text: numbers of any size, strings with any content, null. */
const idText = fc.oneof(
  fc.integer().map(String),
  numberText,
  fc.constant("null"),
  hostileString(16).map((value) => JSON.stringify(value)),
  fc.tuple(hostileString(16), fc.boolean()).map(([value, all]) => jsonStringText(value, all)),
);

const canonical = (value: unknown) => JSON.stringify(value);

describe("withId against JSON.parse", () => {
  it("replaces exactly the top-level id value; every other byte is unchanged", () => {
    fc.assert(
      fc.property(objectDocArb, idText, ({ text, members }, newId) => {
        const result = withId(text, newId);
        const id = members.find((member) => member.key === "id");
        if (id !== undefined) {
          expect(memberValueSpan(text, "id")).toEqual(id.span);
          expect(result).toBe(`${text.slice(0, id.span.start)}${newId}${text.slice(id.span.end)}`);
        } else {
          expect(memberValueSpan(text, "id")).toBeNull();
          const open = text.indexOf("{");
          const empty = members.length === 0;
          expect(result).toBe(
            `${text.slice(0, open + 1)}"id":${newId}${empty ? "" : ","}${text.slice(open + 1)}`,
          );
        }
        // The oracle: the parsed result is the parsed original with `id` replaced.
        const parsed = JSON.parse(result) as Record<string, unknown>;
        expect(canonical(parsed.id)).toBe(canonical(JSON.parse(newId)));
        const keys = Object.keys(parsed).filter((key) => key !== "id");
        expect(keys.sort()).toEqual(
          members
            .map((member) => member.key)
            .filter((key) => key !== "id")
            .sort(),
        );
        for (const member of members) {
          if (member.key === "id") continue;
          const own = Object.getOwnPropertyDescriptor(parsed, member.key)?.value;
          expect(canonical(own)).toBe(canonical(member.value));
        }
      }),
      fuzzParams(1500),
    );
  });

  it("is the identity when the id already reads the same", () => {
    fc.assert(
      fc.property(objectDocArb, ({ text, members }) => {
        const id = members.find((member) => member.key === "id");
        if (id === undefined) return;
        expect(withId(text, text.slice(id.span.start, id.span.end))).toBe(text);
      }),
      fuzzParams(500),
    );
  });

  it("memberValueSpan slices every top-level key (escaped, __proto__, hostile) to its value", () => {
    fc.assert(
      fc.property(objectDocArb, ({ text, members }) => {
        for (const member of members) {
          const span = memberValueSpan(text, member.key);
          expect(span).toEqual(member.span);
          if (span === null) continue;
          expect(canonical(JSON.parse(text.slice(span.start, span.end)))).toBe(
            canonical(member.value),
          );
        }
      }),
      fuzzParams(1000),
    );
  });
});

describe("arrayElementSpans against JSON.parse", () => {
  it("spans of fc.jsonValue arrays with random whitespace slice to texts that parse to the elements", () => {
    fc.assert(
      fc.property(
        fc.array(jsonValue({ maxDepth: 3 }), { maxLength: 20 }),
        layoutArb,
        (items, newLayout) => {
          const layout = newLayout();
          const text = `${layout.ws()}${serialize(items, layout)}${layout.ws()}`;
          const spans = arrayElementSpans(text);
          expect(spans.length).toBe(items.length);
          spans.forEach((span, index) => {
            expect(canonical(JSON.parse(text.slice(span.start, span.end)))).toBe(
              canonical(items[index]),
            );
          });
          // Between the elements there is only punctuation and whitespace.
          let gaps = text;
          for (const span of [...spans].reverse()) {
            gaps = `${gaps.slice(0, span.start)}${gaps.slice(span.end)}`;
          }
          expect(gaps).toMatch(/^[\s[\],]*$/);
        },
      ),
      fuzzParams(1000),
    );
  });

  it("spans of hostile JSON arrays (escapes, duplicate keys, huge numbers) parse to the elements", () => {
    fc.assert(
      fc.property(fc.array(jsonText, { maxLength: 8 }), layoutArb, (items, newLayout) => {
        const layout = newLayout();
        const text = `${layout.ws()}[${items.map((item) => `${layout.ws()}${item}${layout.ws()}`).join(",")}${items.length === 0 ? layout.ws() : ""}]${layout.ws()}`;
        const parsed = JSON.parse(text) as unknown[];
        const spans = arrayElementSpans(text);
        expect(spans.length).toBe(parsed.length);
        spans.forEach((span, index) => {
          expect(canonical(JSON.parse(text.slice(span.start, span.end)))).toBe(
            canonical(parsed[index]),
          );
        });
      }),
      fuzzParams(800),
    );
  });

  it("valueEnd finds the end of any JSON value", () => {
    fc.assert(
      fc.property(jsonText, whitespace, (text, trailing) => {
        expect(valueEnd(`${text}${trailing}`, 0)).toBe(text.length);
      }),
      fuzzParams(1000),
    );
  });
});

describe("regression: duplicate `id` members", () => {
  // memberValueSpan returned the FIRST `id` member, JSON.parse keeps the LAST, so withId
  // rewrote an id nobody reads: `{"id":0,"method":"m","id":1}` kept reading as id 1.
  it("withId set the first of two `id` members; now it sets the one JSON.parse reads", () => {
    fc.assert(
      fc.property(jsonValue({ maxDepth: 1 }), fc.integer(), fc.integer(), (first, last, next) => {
        const text = `{"id":${JSON.stringify(first)},"method":"m","id":${last}}`;
        expect((JSON.parse(withId(text, String(next))) as { id: unknown }).id).toBe(next);
      }),
      fuzzParams(100),
    );
  });
});
