// What every spec shares: a page whose console errors and CSP violations fail the test, axe-core
// (WCAG 2.1 A/AA), the horizontal-overflow check, and the seeded store's fixtures.
import AxeBuilder from "@axe-core/playwright";
import { test as base, expect, type Page } from "@playwright/test";
import { readFileSync } from "node:fs";

export interface Fixtures {
  evaluations: Record<string, string>;
  timeout_seed: number;
  tampered: { episode: number; step: number; field: string };
  long: number;
}

export function fixtures(): Fixtures {
  return JSON.parse(readFileSync(new URL("./.fixtures.json", import.meta.url), "utf8")) as Fixtures;
}

export const test = base.extend<{ problems: string[] }>({
  problems: [
    async ({ page }, use) => {
      const problems: string[] = [];
      page.on("console", (msg) => {
        if (msg.type() === "error") problems.push(`console: ${msg.text()}`);
      });
      page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));
      await page.addInitScript(() => {
        document.addEventListener("securitypolicyviolation", (e) => {
          console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`);
        });
      });
      await use(problems);
      expect(problems, "console errors or CSP violations").toEqual([]);
    },
    { auto: true },
  ],
});

export { expect };

/** axe-core, WCAG 2.1 A and AA: no violation in the page's current state. */
export async function expectAccessible(page: Page, what: string) {
  const result = await new AxeBuilder({ page }).withTags(["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]).analyze();
  const found = result.violations.map((v) => `${v.id} (${v.nodes.length}): ${v.nodes[0]?.target.join(" ")}`);
  expect(found, `axe violations on ${what}`).toEqual([]);
}

/** No horizontal overflow at the workbench's three widths. */
export async function expectNoOverflow(page: Page, what: string) {
  for (const width of [1024, 1280, 1440]) {
    await page.setViewportSize({ width, height: 900 });
    const over = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(over, `${what} overflows horizontally at ${width}px`).toBeLessThanOrEqual(0);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}
