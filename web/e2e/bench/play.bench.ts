// Play's figure (issue 21): a step's click to the updated picture, p50 at most 150 ms on
// loopback. Timed inside the page (performance.now()): from the click on the call button to
// the first frame after the picture shows the new step, over 30 calls of a read-only tool.
import { expect, test } from "../fixtures";

const STEPS = 30;
const BUDGET_MS = 150;

interface Timings {
  clicks: number[];
  drawn: number[];
}

test("play: a step's click to the updated picture", async ({ page }) => {
  await page.goto("/ui/play?env=release&scenario=nominal&seed=1&tool=inspect");
  await page.getByRole("button", { name: "Start episode" }).click();
  const call = page.getByRole("button", { name: "Call inspect" });
  await expect(call).toBeVisible();

  await page.evaluate(() => {
    const t: Timings = { clicks: [], drawn: [] };
    (window as unknown as { timings: Timings }).timings = t;
    document.addEventListener(
      "click",
      (e) => {
        if ((e.target as Element).closest(".tool-form button[type=submit]")) t.clicks.push(performance.now());
      },
      true,
    );
    let shown = document.querySelector("[data-testid=picture]")?.getAttribute("data-step");
    new MutationObserver(() => {
      const now = document.querySelector("[data-testid=picture]")?.getAttribute("data-step");
      if (now === shown) return;
      shown = now;
      requestAnimationFrame(() => t.drawn.push(performance.now()));
    }).observe(document.querySelector("main")!, { subtree: true, childList: true, attributes: true });
  });

  for (let step = 1; step <= STEPS; step++) {
    await call.click();
    await expect(page.locator(`[data-testid=picture][data-step="${step}"]`)).toBeVisible();
    await expect(call).toBeEnabled();
  }

  const { clicks, drawn } = await page.evaluate(() => (window as unknown as { timings: Timings }).timings);
  expect([clicks.length, drawn.length]).toEqual([STEPS, STEPS]);
  const ms = clicks.map((c, i) => drawn[i] - c).sort((a, b) => a - b);
  const at = (q: number) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))];
  console.log(
    `play: click to updated picture over ${STEPS} steps: p50 ${at(0.5).toFixed(1)} ms, ` +
      `p95 ${at(0.95).toFixed(1)} ms, max ${ms.at(-1)!.toFixed(1)} ms (budget p50 ${BUDGET_MS} ms)`,
  );
  expect(at(0.5)).toBeLessThanOrEqual(BUDGET_MS);
});
