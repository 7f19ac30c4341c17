// Chromium logs every request a server refuses ("Failed to load resource: the server responded
// with a status of 401"), and the fixture fails a spec on any console error. A spec that provokes
// refusals on purpose accounts for exactly those: one logged line per refused response, removed;
// any other console error still fails it.
import type { Page } from "@playwright/test";
import { expect } from "./fixtures";

export function expectRefusals(page: Page, problems: string[], status: number): () => void {
  let refused = 0;
  page.on("response", (response) => {
    if (response.status() === status) refused += 1;
  });
  return () => {
    const logged = problems.filter((p) => p.includes(`status of ${status}`));
    expect(refused, `responses with status ${status}`).toBeGreaterThan(0);
    expect(logged).toHaveLength(refused);
    problems.splice(0, problems.length, ...problems.filter((p) => !logged.includes(p)));
  };
}
