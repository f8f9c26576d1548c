import { describe, expect, it } from "vitest";
import { duplicateKeys } from "../../../functions/core/jsonrpc/json-duplicate-keys.ts";

describe("keys written twice in one JSON object", () => {
  it.each<[string, string, Array<{ path: Array<string | number>; key: string }>]>([
    ["none", '{"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]}', []],
    ["at the root", '{"a":1,"a":2}', [{ path: [], key: "a" }]],
    [
      "three times: each repeat",
      '{"a":1,"a":2,"a":3}',
      [
        { path: [], key: "a" },
        { path: [], key: "a" },
      ],
    ],
    [
      "in an array's second object",
      '{"p":[{"x":1},{"x":1,"x":2}]}',
      [{ path: ["p", 1], key: "x" }],
    ],
    ["written with an escape", '{"ab":1,"\\u0061b":2}', [{ path: [], key: "ab" }]],
    ["a value equal to a key is no key", '{"a":"a","b":["a","a"]}', []],
    ["quotes and colons inside strings", '{"a":"x\\":1,\\"a","b":"a:"}', []],
    ["whitespace before the colon", '{ "a" : 1 , "a"\n:\t2 }', [{ path: [], key: "a" }]],
    [
      "nested arrays keep their indexes",
      '[[0,{"k":1}],[1,{"k":1,"k":2}]]',
      [{ path: [1, 1], key: "k" }],
    ],
  ])("%s", (_name, text, expected) => {
    expect(JSON.parse(text)).toBeDefined();
    expect(duplicateKeys(text)).toEqual(expected);
  });

  it("regression: each object or array copied the whole path above it, so a 100 KB config nested 50,000 deep ran the scan out of memory (20,000 deep took 7 s); now the path is built only for a repeat", () => {
    const depth = 100_000;
    const text = `${'{"a":'.repeat(depth)}{"k":1,"k":2}${"}".repeat(depth)}`;
    expect(JSON.parse(text)).toBeDefined();
    const [found, ...rest] = duplicateKeys(text);
    expect(rest).toEqual([]);
    expect(found?.key).toBe("k");
    expect(found?.path.length).toBe(depth);
  });

  it("a repeat at every level of a config nested 50,000 deep names the first 20, not all of them", () => {
    const depth = 50_000;
    const text = `${'{"k":1,"k":2,"b":'.repeat(depth)}1${"}".repeat(depth)}`;
    const found = duplicateKeys(text);
    expect(found.length).toBe(20);
    expect(found[19]?.path).toEqual(Array(19).fill("b"));
  });
});
