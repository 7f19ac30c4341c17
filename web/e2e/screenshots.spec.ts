// The README's screenshots, one per page, taken by the browser run: into test-results/ on every
// run, and into docs/workbench/ (committed) with UPDATE_SCREENSHOTS=1 (`make screenshots`).
import { fileURLToPath } from "node:url";
import type { Page } from "@playwright/test";
import { expect, fixtures, test } from "./fixtures";

const DOCS = fileURLToPath(new URL("../../docs/workbench/", import.meta.url));
const RESULTS = fileURLToPath(new URL("../test-results/screenshots/", import.meta.url));

async function shoot(page: Page, name: string) {
  const folder = process.env.UPDATE_SCREENSHOTS === "1" ? DOCS : RESULTS;
  await page.screenshot({ path: `${folder}${name}.png`, fullPage: false });
}

test("a screenshot of each page", async ({ page }) => {
  const { evaluations, timeout_seed: seed } = fixtures();
  await page.setViewportSize({ width: 1280, height: 800 });

  await page.goto("/ui/");
  await expect(page.getByRole("heading", { name: /^fleet/ })).toBeVisible();
  await shoot(page, "home");

  await page.goto(`/ui/play?env=release&scenario=mixed&split=test&seed=${seed}`);
  await page.getByRole("button", { name: /start/i }).first().click();
  for (const step of [1, 2]) {
    await page.getByRole("button", { name: "Take one step" }).click();
    await expect(page.getByTestId("step-count")).toContainText(`step ${step}`);
  }
  await shoot(page, "play");

  await page.goto("/ui/episodes?env=fleet");
  await expect(page.getByRole("link", { name: /^#\d+$/ }).first()).toBeVisible();
  await shoot(page, "episodes");

  const fleet = await (await page.request.get("/api/episodes?env=fleet&policy=oracle&limit=1")).json();
  await page.goto(`/ui/episodes/${fleet[0].id}?step=3`);
  await expect(page.getByTestId("world-picture")).toBeVisible();
  await shoot(page, "episode");

  const release = Object.keys(evaluations).find((name) => evaluations[name] === "release")!;
  await page.goto(`/ui/evaluations/${encodeURIComponent(release)}`);
  await expect(page.locator("[data-whisker]").first()).toBeVisible();
  await shoot(page, "evaluation");

  await page.goto("/ui/training");
  await expect(page.getByRole("heading", { level: 1 })).toBeVisible();
  await shoot(page, "training");
});
