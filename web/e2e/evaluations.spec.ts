import { expect, expectAccessible, expectNoOverflow, fixtures, test } from "./fixtures";

interface Interval {
  value: number;
  low: number;
  high: number;
}
interface Summary {
  policy: string;
  scenario: string;
  outcomes: Record<string, Interval>;
  return: Interval;
  pass_hat_k: Record<string, number>;
  lies: unknown;
}

/** The seeded release evaluation (oracle and naive on the same public seeds). */
function releaseEvaluation(): string {
  const name = Object.entries(fixtures().evaluations).find(([, env]) => env === "release")?.[0];
  if (!name) throw new Error("the fixtures name no release evaluation");
  return name;
}

test("the list shows every stored evaluation, filtered by world in the URL", async ({ page }) => {
  const { evaluations } = fixtures();
  await page.goto("/ui/evaluations");
  for (const name of Object.keys(evaluations)) {
    await expect(page.locator(`[data-evaluation="${name}"]`)).toBeVisible();
  }
  await expectAccessible(page, "evaluations");
  await expectNoOverflow(page, "evaluations");

  await page.getByLabel("Show evaluations of").selectOption("fleet");
  await expect(page).toHaveURL(/\?env=fleet$/);
  const fleet = Object.keys(evaluations).filter((n) => evaluations[n] === "fleet");
  await expect(page.locator("[data-evaluation]")).toHaveCount(fleet.length);
  await expectAccessible(page, "evaluations of one world");
  await page.goBack();
  await expect(page.locator("[data-evaluation]")).toHaveCount(Object.keys(evaluations).length);
});

test("evaluation whiskers equal the API's interval bounds", async ({ page, request }) => {
  const name = releaseEvaluation();
  const found = await (await request.get(`/api/evaluations/${name}`)).json();
  const summaries = found.aggregates.summary as Summary[];
  expect(summaries.length).toBeGreaterThan(1);

  await page.goto(`/ui/evaluations/${name}`);
  for (const s of summaries) {
    const card = page.locator(`[data-policy="${s.policy}"][data-scenario="${s.scenario}"]`);
    await expect(card).toBeVisible();
    // Every outcome its own whisker (never one blended rate), and the return's.
    await expect(card.locator("[data-whisker]")).toHaveCount(Object.keys(s.outcomes).length + (s.lies ? 2 : 1));
    for (const [outcome, interval] of Object.entries(s.outcomes)) {
      const whisker = card.locator(`[data-whisker="${outcome}"]`);
      await expect(whisker).toHaveAttribute("data-low", String(interval.low));
      await expect(whisker).toHaveAttribute("data-high", String(interval.high));
      await expect(whisker).toHaveAttribute("data-value", String(interval.value));
      // The line is drawn where the bounds say, on a 0–100% track.
      await expect(whisker.locator(".whisker-range")).toHaveAttribute("x1", `${interval.low * 100}%`);
      await expect(whisker.locator(".whisker-range")).toHaveAttribute("x2", `${interval.high * 100}%`);
      await expect(card.locator(`tr[data-row="${outcome}"] [data-outcome="${outcome}"]`)).toBeVisible();
    }
    const ret = card.locator('[data-whisker="return"]');
    await expect(ret).toHaveAttribute("data-low", String(s.return.low));
    await expect(ret).toHaveAttribute("data-high", String(s.return.high));
    await expect(card.locator('[data-fact="pass_hat_1"] dd')).toHaveText(`${(s.pass_hat_k["1"] * 100).toFixed(1)}%`);
  }
  await expectAccessible(page, "an evaluation");
  await expectNoOverflow(page, "an evaluation");
});

test("pairs counts equal the API's, and each pair links to both episodes", async ({ page, request }) => {
  const name = releaseEvaluation();
  const [a, b] = (await (await request.get(`/api/evaluations/${name}`)).json()).config.policies as string[];
  const pairs = await (await request.get(`/api/evaluations/${name}/pairs?a=${a}&b=${b}`)).json();

  await page.goto(`/ui/evaluations/${name}?a=${a}&b=${b}`);
  const table = page.getByTestId("pair-counts");
  for (const cell of ["both", "only_a", "only_b", "neither"]) {
    await expect(table.locator(`[data-cell="${cell}"]`)).toHaveText(String(pairs.counts[cell]));
  }
  await expect(page.getByTestId("mcnemar").locator("[data-p]")).toHaveAttribute("data-p", String(pairs.p_value));
  await expect(page.locator("[data-pair-cell]")).toHaveCount(pairs.rows.length);
  await expectAccessible(page, "a paired comparison");

  // Only the pairs where A alone met the criterion: the choice is in the URL, back undoes it.
  await page.getByLabel("Show pairs").selectOption("only_a");
  await expect(page).toHaveURL(/cell=only_a/);
  await expect(page.locator("[data-pair-cell]")).toHaveCount(pairs.counts.only_a);
  await expectAccessible(page, "the pairs only A met");
  await page.goBack();
  await expect(page.locator("[data-pair-cell]")).toHaveCount(pairs.rows.length);

  const first = pairs.rows[0];
  await page.locator(`[data-pair-cell] a[data-side="a"]`).first().click();
  await expect(page).toHaveURL(new RegExp(`/ui/episodes/${first.a.id}$`));
  await expect(page.getByRole("heading", { level: 1 })).toContainText(String(first.a.id));
  await page.goBack();
  await page.locator(`[data-pair-cell] a[data-side="b"]`).first().click();
  await expect(page).toHaveURL(new RegExp(`/ui/episodes/${first.b.id}$`));
  await expect(page.getByRole("heading", { level: 1 })).toContainText(String(first.b.id));
  await page.goBack();

  // Swapping the sides swaps only A and only B.
  await page.getByLabel("Policy A").selectOption(b);
  await page.getByLabel("Policy B").selectOption(a);
  await expect(table.locator('[data-cell="only_a"]')).toHaveText(String(pairs.counts.only_b));
  await expect(table.locator('[data-cell="only_b"]')).toHaveText(String(pairs.counts.only_a));
});

test("a small evaluation started here is followed to its end and verified", async ({ page }) => {
  const name = `e2e-started-${Date.now()}`;
  await page.goto("/ui/evaluations");
  const form = page.locator("form.new-eval");
  await form.getByLabel("World").selectOption("release");
  await form.getByRole("checkbox", { name: "naive", exact: true }).check();
  await form.getByLabel("Episodes per policy and scenario").fill("2");
  await form.getByLabel("Name (optional)").fill(name);
  await expect(form).toContainText("4 episodes");
  await expectAccessible(page, "the start form");
  await form.getByRole("button", { name: "Start the evaluation" }).click();

  await expect(page).toHaveURL(new RegExp(`/ui/evaluations/${name}$`));
  await expect(page.getByTestId("evaluation-status")).toHaveAttribute("data-status", "done", { timeout: 30_000 });
  await expect(page.locator(".eval-card")).toHaveCount(2);
  await expect(page.locator('[data-policy="naive"] [data-whisker]').first()).toBeVisible();

  await page.getByRole("button", { name: "Verify by replay" }).click();
  const verdict = page.getByTestId("verify").locator("[data-exit-code]");
  await expect(verdict).toHaveAttribute("data-exit-code", "0", { timeout: 30_000 });
  await expect(verdict).toContainText("4 of 4 episodes replay to their records");
  await expect(verdict).toContainText("matches");
  await expectAccessible(page, "a verified evaluation");
});

test("verifying the tampered evaluation names the edited step", async ({ page }) => {
  const { tampered } = fixtures();
  const name = releaseEvaluation();
  await page.goto(`/ui/evaluations/${name}`);
  await page.getByRole("button", { name: "Verify by replay" }).click();
  const verdict = page.getByTestId("verify").locator("[data-exit-code]");
  await expect(verdict).not.toHaveAttribute("data-exit-code", "0", { timeout: 30_000 });
  const problem = verdict.locator(`[data-problem-episode="${tampered.episode}"]`);
  await expect(problem).toContainText(`at step ${tampered.step}`);
  await expect(problem).toContainText(`field ${tampered.field}`);
  await expectAccessible(page, "a failed verification");
});
