import { describe, expect, it } from "vitest";
import { apiQuery, DEFAULT_PAGE_SIZE, listSearch, pageCount, readListQuery } from "./listQuery";

const read = (search: string) => readListQuery(new URLSearchParams(search));

describe("the Episodes list's URL", () => {
  it("reads filters, page and size, and writes them back in a fixed order", () => {
    const query = read("split=test&page=3&env=release&size=10&policy=%20naive%20");
    expect(query).toEqual({ filters: { env: "release", policy: "naive", split: "test" }, page: 3, size: 10 });
    expect(listSearch(query)).toBe("env=release&policy=naive&split=test&size=10&page=3");
  });

  it("drops what the server would refuse and leaves defaults out", () => {
    const query = read("split=holdout&page=-2&size=7&outcome=&family=nominal");
    expect(query).toEqual({ filters: { family: "nominal" }, page: 1, size: DEFAULT_PAGE_SIZE });
    expect(listSearch(query)).toBe("family=nominal");
    expect(listSearch(read(""))).toBe("");
  });

  it("asks the server for one page, newest first", () => {
    expect(apiQuery(read("env=fleet&page=3&size=25"))).toEqual({ env: "fleet", order: "newest", limit: 25, offset: 50 });
  });

  it("counts pages, one at least", () => {
    expect(pageCount(0, 50)).toBe(1);
    expect(pageCount(50, 50)).toBe(1);
    expect(pageCount(51, 50)).toBe(2);
    expect(pageCount(10_000, 50)).toBe(200);
  });
});
