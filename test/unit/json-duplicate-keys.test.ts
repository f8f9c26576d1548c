import { describe, expect, it } from "vitest";
import { duplicateKeys } from "../../functions/core/json-duplicate-keys.ts";

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
});
