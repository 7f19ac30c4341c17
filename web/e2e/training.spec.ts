import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { APIRequestContext, Page } from "@playwright/test";
import { expect, expectAccessible, expectNoOverflow, test } from "./fixtures";
import { expectRefusals } from "./refusals";

// The e2e server trains at most 4,096 PPO steps a job; these jobs are far smaller (seconds each).
const TINY = {
  total_timesteps: 1024,
  n_envs: 1,
  n_steps: 128,
  batch_size: 64,
  n_epochs: 1,
  checkpoint_every: 0,
  net_arch: [16],
};

const stamp = () => `${Date.now().toString(36)}${Math.floor(Math.random() * 1e4)}`;

/** Start a tiny PPO job through the API and wait for its end. */
async function train(request: APIRequestContext, name: string, config: Record<string, unknown>) {
  const data = { kind: "ppo", name, config: { ...TINY, eval_episodes: 0, eval_every: 0, ...config } };
  const started = await request.post("/api/training/jobs", { data });
  expect(started.status(), await started.text()).toBe(202);
  await expect
    .poll(async () => (await (await request.get(`/api/training/jobs/${name}`)).json()).status, { timeout: 60_000, intervals: [500] })
    .toBe("succeeded");
}

/** Fill a field of the trainer's form by its label (opening "More settings" when it is there). */
async function fill(page: Page, label: string, value: string) {
  const input = page.getByLabel(label, { exact: true });
  if (!(await input.isVisible())) await page.getByText(/^More settings/).click();
  await input.fill(value);
}

test("a PPO job started from the form streams a curve point and log lines, succeeds, its model downloads with the server's SHA-256, and it is evaluated", async ({
  page,
  request,
}) => {
  const name = `e2e-ppo-${stamp()}`;
  await page.goto("/ui/training");
  await expect(page.getByRole("heading", { name: "Start a training job" })).toBeVisible();
  await expectAccessible(page, "training");
  await expectNoOverflow(page, "training");

  await fill(page, "Total Timesteps", "1024");
  await fill(page, "N Envs", "1");
  await fill(page, "N Steps", "128");
  await fill(page, "Batch Size", "64");
  await fill(page, "N Epochs", "1");
  await fill(page, "Eval Every", "512");
  await fill(page, "Eval Curve Episodes", "2");
  await fill(page, "Eval Episodes", "2");
  await fill(page, "Checkpoint Every", "0");
  await fill(page, "Net Arch", "16");
  await page.getByLabel("Job name (optional)").fill(name);
  await expectAccessible(page, "the training form, every setting shown");
  const stream = page.waitForRequest((r) => r.url().endsWith(`/api/training/jobs/${name}/stream`));
  await page.getByRole("button", { name: "Start ppo job" }).click();

  await expect(page).toHaveURL(new RegExp(`/ui/training/${name}$`));
  await stream;
  // The event stream brings the log and the curves (a finished job's stream replays them).
  await expect(page.getByTestId("log")).toContainText(`job ${name}: ppo on release`, { timeout: 30_000 });
  await expect(page.locator("[data-series]").first()).not.toHaveAttribute("data-points", "0", { timeout: 30_000 });
  await expect(page.getByTestId("job-status").locator("[data-job-status]")).toHaveAttribute("data-job-status", "succeeded", {
    timeout: 60_000,
  });
  await expect(page.getByTestId("log")).toContainText("done in");
  await expectAccessible(page, "a finished job");
  await expectNoOverflow(page, "a finished job");

  const files = (await (await request.get(`/api/training/jobs/${name}/artifacts`)).json()).files as { path: string; sha256: string }[];
  const model = files.find((f) => f.path === "model.zip");
  expect(model).toBeTruthy();
  await expect(page.locator('[data-file="model.zip"]')).toHaveAttribute("data-sha256", model!.sha256);
  const downloading = page.waitForEvent("download");
  await page.getByRole("button", { name: "Download model.zip" }).click();
  const downloaded = await downloading;
  expect(downloaded.suggestedFilename()).toBe("model.zip");
  expect(downloaded.url()).toMatch(/^blob:/);
  const bytes = readFileSync(await downloaded.path());
  expect(createHash("sha256").update(bytes).digest("hex")).toBe(model!.sha256);

  // Evaluate the model beside the oracle on the same seeds, and follow it to its end.
  const form = page.locator("form", { has: page.getByRole("heading", { name: "Evaluate the model" }) });
  await form.getByLabel("Episodes").fill("2");
  await form.getByRole("button", { name: "Evaluate" }).click();
  await expect(page).toHaveURL(/\/ui\/evaluations\//);
  await expect(page.getByTestId("evaluation-status")).toHaveAttribute("data-status", "done", { timeout: 30_000 });
  await expect(page.locator(`[data-policy="ppo:runs:${name}"] [data-whisker]`).first()).toBeVisible();
});

test("a stopped job ends stopped", async ({ page }) => {
  const name = `e2e-stop-${stamp()}`;
  await page.goto("/ui/training");
  await fill(page, "Total Timesteps", "4096");
  await page.getByLabel("Job name (optional)").fill(name);
  await page.getByRole("button", { name: "Start ppo job" }).click();
  await expect(page).toHaveURL(new RegExp(`/ui/training/${name}$`));
  await page.getByRole("button", { name: "Stop" }).click();
  const status = page.getByTestId("job-status").locator("[data-job-status]");
  await expect(status).toHaveAttribute("data-job-status", "stopped", { timeout: 30_000 });
  await expect(page.getByRole("button", { name: "Stop" })).toHaveCount(0);
  await expectAccessible(page, "a stopped job");
});

test("a setting the server refuses is named on its field", async ({ page, problems }) => {
  const refusals = expectRefusals(page, problems, 422);
  await page.goto("/ui/training");
  // A bound the browser does not check (learning_rate > 0): the server's 422 lands on the field,
  // and the disclosure holding it opens.
  await fill(page, "Learning Rate", "0");
  await page.getByRole("button", { name: "Start ppo job" }).click();
  const field = page.locator('[data-field="learning_rate"]');
  await expect(field.locator(".field-error")).toContainText("greater than 0");
  await expect(field.getByLabel("Learning Rate", { exact: true })).toHaveAttribute("aria-invalid", "true");
  await expect(page).toHaveURL(/\/ui\/training$/);
  await expectAccessible(page, "the training form with a refused field");
  refusals();
});

test("two runs' curves overlaid and their configs diffed", async ({ page, request }) => {
  const a = `e2e-cmp-a-${stamp()}`;
  const b = `e2e-cmp-b-${stamp()}`;
  await train(request, a, { seed: 1 });
  await train(request, b, { seed: 2, learning_rate: 0.001 });
  const runA = await (await request.get(`/api/training/runs/${a}`)).json();
  const runB = await (await request.get(`/api/training/runs/${b}`)).json();

  await page.goto("/ui/training");
  await page.getByRole("checkbox", { name: `Compare ${a}` }).check();
  await page.getByRole("checkbox", { name: `Compare ${b}` }).check();
  await expect(page).toHaveURL(new RegExp(`compare=${a}%2C${b}`));
  await page.getByLabel("Curve", { exact: true }).selectOption("return");
  await expect(page).toHaveURL(/curve=return/);

  const chart = page.locator('.overlay [data-curve="return"]');
  await expect(chart.locator(`[data-series="${a}"]`)).toHaveAttribute("data-points", String(runA.curves.return.length));
  await expect(chart.locator(`[data-series="${b}"]`)).toHaveAttribute("data-points", String(runB.curves.return.length));

  const diff = page.getByTestId("config-diff");
  const differing = Object.keys(runA.config).filter((k) => JSON.stringify(runA.config[k]) !== JSON.stringify(runB.config[k]));
  expect(differing.sort()).toEqual(["learning_rate", "seed"]);
  await expect(diff.locator("tbody tr")).toHaveCount(differing.length);
  await expect(diff.locator('[data-setting="learning_rate"]')).toContainText("0.001");
  await expect(diff.locator('[data-setting="seed"]')).toHaveAttribute("data-differs", "true");
  await expectAccessible(page, "two runs compared");
  await expectNoOverflow(page, "two runs compared");

  await page.getByLabel("Show the settings they share too").check();
  await expect(diff.locator("tbody tr")).toHaveCount(Object.keys(runA.config).length);

  // The comparison is a deep link.
  await page.goto(`/ui/training?compare=${a},${b}&curve=return`);
  await expect(page.locator(`.overlay [data-series="${b}"]`)).toHaveAttribute("data-points", String(runB.curves.return.length));
});
