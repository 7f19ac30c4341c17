// The Episodes page (filters, server paging, deep links, back/forward) and the episode viewer
// (timeline, reported beside true, verdict, reward, replay badge, download, keyboard, and a
// 2,000-step timeline that stays virtualised), against the seeded store of e2e/serve.py.
import { readFileSync } from "node:fs";
import type { APIRequestContext, Page } from "@playwright/test";
import type { Schemas } from "../src/api/client";
import { expect, expectAccessible, expectNoOverflow, fixtures, test } from "./fixtures";

type Row = Schemas["EpisodeRow"];
const seeded = fixtures;
const releaseEvaluation = () => Object.keys(seeded().evaluations).find((name) => seeded().evaluations[name] === "release")!;

async function listed(request: APIRequestContext, query: string): Promise<{ rows: Row[]; total: number }> {
  const response = await request.get(`/api/episodes?order=newest&limit=1000&${query}`);
  expect(response.ok()).toBe(true);
  return { rows: (await response.json()) as Row[], total: Number(response.headers()["x-total-count"]) };
}

const shownIds = (page: Page) =>
  page.locator("tbody tr[data-episode]").evaluateAll((rows) => rows.map((r) => Number(r.getAttribute("data-episode"))));

test("Episodes: filtered, paged by the server, deep-linked, and back/forward walk the lists", async ({ page, request }) => {
  const evaluation = releaseEvaluation();
  const all = await listed(request, "");
  const ofEvaluation = await listed(request, `evaluation=${evaluation}`);
  const naive = await listed(request, `evaluation=${evaluation}&policy=naive`);

  await page.goto("/ui/episodes");
  await expect(page.getByTestId("episode-count")).toHaveAttribute("data-total", String(all.total));
  // Newest first: the page is the store's newest, in order.
  await expect.poll(() => shownIds(page)).toEqual(all.rows.slice(0, 50).map((r) => r.id));
  await expectAccessible(page, "the episode list");
  await expectNoOverflow(page, "the episode list");

  await page.getByLabel("Evaluation").selectOption(evaluation);
  await expect(page).toHaveURL(new RegExp(`/ui/episodes\\?evaluation=${evaluation}$`));
  await expect(page.getByTestId("episode-count")).toHaveAttribute("data-total", String(ofEvaluation.total));
  await page.getByLabel("Rows per page").selectOption("10");
  await expect(page).toHaveURL(/size=10/);
  await expect(page.getByTestId("page-of")).toHaveText(`Page 1 of ${Math.ceil(ofEvaluation.total / 10)}`);
  await expect.poll(() => shownIds(page)).toEqual(ofEvaluation.rows.slice(0, 10).map((r) => r.id));

  await page.getByRole("link", { name: "Older →" }).click();
  await expect(page).toHaveURL(/page=2/);
  await expect.poll(() => shownIds(page)).toEqual(ofEvaluation.rows.slice(10, 20).map((r) => r.id));

  await page.getByLabel("Policy").fill("naive");
  await page.getByLabel("Policy").press("Enter");
  await expect(page).toHaveURL(new RegExp(`\\?evaluation=${evaluation}&policy=naive&size=10$`));
  await expect(page.getByTestId("episode-count")).toHaveAttribute("data-total", String(naive.total));
  await expect.poll(() => shownIds(page)).toEqual(naive.rows.slice(0, 10).map((r) => r.id));
  await expect(page.locator("tbody tr td:nth-child(4)")).toHaveText(Array(10).fill("naive"));
  await expectAccessible(page, "the filtered episode list");

  // Back: the unfiltered page 2 again, its form showing no policy; forward: the filter again.
  await page.goBack();
  await expect(page).toHaveURL(/page=2/);
  await expect(page.getByLabel("Policy")).toHaveValue("");
  await expect.poll(() => shownIds(page)).toEqual(ofEvaluation.rows.slice(10, 20).map((r) => r.id));
  await page.goForward();
  await expect(page.getByLabel("Policy")).toHaveValue("naive");
  await expect(page.getByTestId("episode-count")).toHaveAttribute("data-total", String(naive.total));

  // A deep link to a filtered list, then a row to its viewer.
  const safe = await listed(request, "env=oversight&outcome=safe_ship");
  expect(safe.total).toBeGreaterThan(0);
  await page.goto("/ui/episodes?env=oversight&outcome=safe_ship");
  await expect(page.getByLabel("World")).toHaveValue("oversight");
  await expect(page.getByLabel("Outcome")).toHaveValue("safe_ship");
  await expect.poll(() => shownIds(page)).toEqual(safe.rows.map((r) => r.id));
  await expect(page.locator("tbody [data-outcome]")).toHaveCount(safe.total);
  for (const outcome of await page.locator("tbody [data-outcome]").all()) await expect(outcome).toHaveAttribute("data-outcome", "safe_ship");
  const first = safe.rows[0];
  await page.getByRole("link", { name: `#${first.id}`, exact: true }).click();
  await expect(page).toHaveURL(new RegExp(`/ui/episodes/${first.id}$`));
  await expect(page.getByRole("heading", { level: 1 })).toHaveText(`Episode #${first.id}`);
});

test("the viewer: timeline reported beside true, lies, verdict failed first, reward, ✓ replay", async ({ page, request }) => {
  const { tampered } = seeded();
  // A naive release episode that trusted a lie and failed the judge.
  const naive = await listed(request, `evaluation=${releaseEvaluation()}&policy=naive`);
  const row = naive.rows.find((r) => r.id !== tampered.episode && (r.lies?.trusted ?? 0) > 0 && r.verdict?.invariants.some((i) => !i.held));
  expect(row, "a naive release episode that trusted a lie").toBeTruthy();
  const { record, lies } = (await (await request.get(`/api/episodes/${row!.id}`)).json()) as Schemas["StoredEpisode"];
  const lie = lies.told.find((l) => l.status === "trusted" && l.told_at > 0)!;

  await page.goto(`/ui/episodes/${row!.id}`);
  await expect(page.getByTestId("replay")).toHaveAttribute("data-match", "true");
  await expect(page.getByTestId("replay")).toHaveText("✓ Replay verified");
  const options = page.getByRole("option");
  await expect(options).toHaveCount(record.events.length);
  // Every row: the call, what was reported, and (from the truth) what the call changed.
  const firstRow = options.first();
  await expect(firstRow).toContainText(`Reported: ${Object.entries(record.events[0].report).map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`).join(" · ")}`);
  await expect(firstRow.locator("[data-truth]")).toContainText("True: ");
  const toldRow = page.locator(`[role=option][data-step="${lie.told_at}"]`);
  await expect(toldRow).toHaveAttribute("data-told", lie.kind);
  await expect(toldRow).toHaveClass(/ep-step-flag/); // highlighted, and marked ⚑
  await expect(toldRow).toContainText("lie told");
  await expect(page.locator(`[role=option][data-step="${lie.settled_at}"]`)).toHaveAttribute("data-settled", "trusted");

  // The verdict: failed invariants first and shown, the passed ones folded.
  const failed = record.verdict!.invariants.filter((i) => !i.held);
  const verdict = page.getByTestId("verdict");
  await expect(verdict.getByRole("list", { name: "Failed invariants" }).getByRole("listitem")).toHaveCount(failed.length);
  await expect(verdict.locator("li[data-invariant]").first()).toHaveAttribute("data-held", "false");
  await expect(verdict.locator('li[data-held="true"]').first()).toBeHidden();
  await verdict.getByText(/passed$/).click();
  await expect(verdict.locator('li[data-held="true"]').first()).toBeVisible();

  // The reward: one chip per component, adding up to the return.
  const chips = page.getByTestId("reward").locator("[data-component]");
  await expect(chips).toHaveCount(Object.keys(record.rewards).length);
  const values = await chips.evaluateAll((els) => els.map((e) => Number(e.getAttribute("data-value"))));
  const shownReturn = Number(await page.getByTestId("return").getAttribute("data-value"));
  expect(shownReturn).toBe(record.return);
  expect(values.reduce((a, b) => a + b, 0)).toBeCloseTo(shownReturn, 9);
  await expectAccessible(page, "the episode viewer");
  await expectNoOverflow(page, "the episode viewer");

  // Selecting steps: the URL holds the step; back/forward walk the steps clicked.
  await options.nth(lie.told_at - 1).click();
  await expect(page).toHaveURL(new RegExp(`\\?step=${lie.told_at}$`));
  const detail = page.getByTestId("step-detail");
  await expect(detail).toHaveAttribute("data-step", String(lie.told_at));
  await expect(detail).toContainText(`This report lied (${lie.kind})`);
  await expect(detail.getByRole("region", { name: `Reported at step ${lie.told_at}` })).toBeVisible();
  await expect(detail.locator("[data-truth] figure, figure [data-truth]").first()).toBeAttached();
  await options.nth(lie.settled_at! - 1).click();
  await expect(page).toHaveURL(new RegExp(`\\?step=${lie.settled_at}$`));
  await expect(detail).toContainText("This call ⚠ trusted the lie");
  await page.goBack();
  await expect(detail).toHaveAttribute("data-step", String(lie.told_at));
  await page.goForward();
  await expect(detail).toHaveAttribute("data-step", String(lie.settled_at));
});

test("a tampered stored record shows ✗ at the right step and field", async ({ page }) => {
  const { tampered } = seeded();
  await page.goto(`/ui/episodes/${tampered.episode}`);
  const badge = page.getByTestId("replay");
  await expect(badge).toHaveAttribute("data-match", "false");
  await expect(badge).toHaveText(`✗ Replay differs at step ${tampered.step}, field ${tampered.field}`);
  await expect(page.locator("[role=option][data-differs]")).toHaveAttribute("data-step", String(tampered.step));
  await page.getByText("What the record says, and what its calls make again").click();
  await expect(page.getByText(`Recorded ${tampered.field}`)).toBeVisible();
  await page.getByRole("link", { name: `Go to step ${tampered.step}` }).click();
  await expect(page).toHaveURL(new RegExp(`\\?step=${tampered.step}$`));
  await expect(page.getByTestId("step-detail")).toContainText(`The replay first differs here, in the field ${tampered.field}`);
  await expectAccessible(page, "a tampered episode");
});

test("the record downloads as JSON", async ({ page, request }) => {
  const { tampered } = seeded();
  const { record } = (await (await request.get(`/api/episodes/${tampered.episode}`)).json()) as Schemas["StoredEpisode"];
  await page.goto(`/ui/episodes/${tampered.episode}`);
  const download = page.waitForEvent("download");
  await page.getByRole("button", { name: "Download the record (JSON)" }).click();
  const file = await download;
  expect(file.suggestedFilename()).toBe(`opsgym-episode-${tampered.episode}.json`);
  const saved = JSON.parse(readFileSync(await file.path(), "utf8")) as Schemas["Record"];
  expect(saved).toEqual(record);
  expect(saved.events).toHaveLength(record.events.length);
});

test("a 2,000-step timeline stays virtualised; j/k and Home/End move the step", async ({ page }) => {
  const { long } = seeded();
  await page.goto(`/ui/episodes/${long}?step=1500`);
  const timeline = page.getByTestId("timeline");
  await expect(timeline).toHaveAttribute("aria-label", "Steps, 2000 in all");
  await expect(page.locator("#step-1500")).toBeInViewport();
  expect(await page.getByRole("option").count()).toBeLessThanOrEqual(100);

  await page.keyboard.press("j");
  await expect(page).toHaveURL(/step=1501$/);
  await page.keyboard.press("k");
  await page.keyboard.press("k");
  await expect(page).toHaveURL(/step=1499$/);
  await timeline.focus();
  await page.keyboard.press("End");
  await expect(page).toHaveURL(/step=2000$/);
  await expect(page.locator("#step-2000")).toBeInViewport();
  await expect(page.getByTestId("step-detail")).toHaveAttribute("data-step", "2000");
  await page.keyboard.press("Home");
  await expect(page).toHaveURL(/step=1$/);
  await expect(page.locator("#step-1")).toBeInViewport();
  expect(await page.getByRole("option").count()).toBeLessThanOrEqual(100);

  // Scrolling through it by wheel keeps the DOM small too.
  for (let i = 0; i < 10; i++) await timeline.hover().then(() => page.mouse.wheel(0, 4000));
  await expect.poll(() => timeline.evaluate((el) => el.scrollTop)).toBeGreaterThan(10_000);
  expect(await page.getByRole("option").count()).toBeLessThanOrEqual(100);
  await expectAccessible(page, "a 2,000-step episode");
  await expectNoOverflow(page, "a 2,000-step episode");
});
