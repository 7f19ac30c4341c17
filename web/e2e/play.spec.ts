// Play: every tool's generated form, the server's field messages, a live episode that holds
// nothing of the truth, and what the page shows once the episode has ended.
import type { Page, Response } from "@playwright/test";
import { expect, expectAccessible, expectNoOverflow, fixtures, test } from "./fixtures";
import { expectRefusals } from "./refusals";

interface JsonSchema {
  properties?: Record<string, { enum?: unknown[]; anyOf?: { type?: string }[]; type?: string; default?: unknown }>;
}
interface World {
  name: string;
  tools: { function: { name: string; parameters: JsonSchema } }[];
}

function sessionOf(page: Page): string {
  const id = new URL(page.url()).searchParams.get("session");
  expect(id, "the session id is in the URL").toBeTruthy();
  return id!;
}

async function start(page: Page, query: string) {
  await page.goto(`/ui/play?${query}`);
  await page.getByRole("button", { name: "Start episode" }).click();
  await expect(page.getByRole("heading", { name: "Act", exact: true })).toBeVisible();
  return sessionOf(page);
}

async function call(page: Page, tool: string, fill: Record<string, string> = {}) {
  await page.getByLabel("Tool", { exact: true }).selectOption(tool);
  const form = page.getByRole("form", { name: `Call ${tool}` });
  for (const [name, value] of Object.entries(fill)) await form.getByLabel(name, { exact: true }).fill(value);
  await form.getByRole("button", { name: `Call ${tool}` }).click();
  return form;
}

const STORE_ROUTES = /\/api\/sessions\/[^/]+\/(record|replay)|\/timeline|\/api\/episodes|\/api\/grade/;
const HIDDEN = ["deploy_timeout", "deploy_committed", "deploy_times_out", '"truth"', '"family"'];

test("every tool of every world renders a form, and a bad value shows the server's field message with nothing changed", async ({
  page,
  problems,
}) => {
  const refusals = expectRefusals(page, problems, 422);
  const worlds = (await (await page.request.get("/api/envs")).json()) as World[];
  expect(worlds.map((w) => w.name).sort()).toEqual(["fleet", "oversight", "release"]);
  for (const world of worlds) {
    await start(page, `env=${world.name}&scenario=mixed`);
    for (const { function: tool } of world.tools) {
      await page.getByLabel("Tool", { exact: true }).selectOption(tool.name);
      const form = page.getByRole("form", { name: `Call ${tool.name}` });
      await expect(form.getByRole("button", { name: `Call ${tool.name}` })).toBeVisible();
      const props = Object.entries(tool.parameters.properties ?? {});
      for (const [name, prop] of props) {
        const control = form.getByLabel(name, { exact: true });
        const concrete = (prop.anyOf ?? [prop]).find((v) => v.type !== "null") as typeof prop;
        const tag = await control.evaluate((el) => `${el.tagName.toLowerCase()}:${el.getAttribute("type") ?? ""}`);
        const expected = concrete.enum ? "select:" : concrete.type === "integer" ? "input:number" : "input:text";
        expect(tag, `${world.name}.${tool.name}.${name}`).toBe(expected);
        if (prop.default !== undefined && prop.default !== null) {
          await expect(control, `${tool.name}.${name} starts at its default`).toHaveValue(JSON.stringify(prop.default));
        }
      }
      await expect(form.locator("input:not([type=checkbox]), select, textarea")).toHaveCount(props.length);
    }
    if (world.name === "release") await expectAccessible(page, "play: a tool's form");
  }

  // A number past its maximum, an enum left unchosen, a value typed as JSON: each is the
  // server's 422, shown beside its field, and the session is as it was.
  for (const [env, tool, field, value, says] of [
    ["release", "shift_traffic", "percent", "150", "less than or equal to 100"],
    ["fleet", "query_nccl_logs", "node", "2.5", "valid integer"],
    ["fleet", "patch_diff", "file", null, "Field required"],
  ] as const) {
    const id = await start(page, `env=${env}&scenario=mixed`);
    const before = await (await page.request.get(`/api/sessions/${id}`)).json();
    const refused = page.waitForResponse((r) => r.url().endsWith("/step") && r.status() === 422);
    const form = await call(page, tool, value === null ? {} : { [field]: value });
    await refused;
    const control = form.getByLabel(field, { exact: true });
    await expect(control).toHaveAttribute("aria-invalid", "true");
    await expect(control).toBeFocused();
    await expect(form.locator(`[data-field="${field}"]`)).toContainText(says);
    expect(await (await page.request.get(`/api/sessions/${id}`)).json(), "nothing changed").toEqual(before);
    await expect(page.getByTestId("step-count")).toContainText("step 0");
  }
  await expectAccessible(page, "play: a field the server refused");

  const id = sessionOf(page);
  const before = await (await page.request.get(`/api/sessions/${id}`)).json();
  await page.getByLabel("Tool", { exact: true }).selectOption("check_telemetry");
  const form = page.getByRole("form", { name: "Call check_telemetry" });
  await form.getByLabel("Edit the arguments as JSON").check();
  await form.getByLabel(/Arguments \(a JSON object/).fill('{"verbose": true}');
  await form.getByRole("button", { name: "Call check_telemetry" }).click();
  await expect(form.getByText("args.verbose: Extra inputs are not permitted")).toBeVisible();
  expect(await (await page.request.get(`/api/sessions/${id}`)).json()).toEqual(before);
  refusals();
});

test("a live release mixed episode whose deploy times out after committing holds nothing of the truth until it ends", async ({
  page,
}) => {
  const { timeout_seed: seed } = fixtures();
  await page.goto(`/ui/play?env=release&scenario=mixed&split=test&seed=${seed}`);
  await expect(page.getByLabel("Seed")).toHaveValue(String(seed));
  await expectAccessible(page, "play: the setup form");

  // From the start of the episode on, every request the page makes and every answer it gets
  // is recorded.
  const asked: string[] = [];
  const answers: Response[] = [];
  page.on("request", (r) => asked.push(r.url()));
  page.on("response", (r) => answers.push(r));
  await page.getByRole("button", { name: "Start episode" }).click();
  await expect(page.getByRole("heading", { name: "Act", exact: true })).toBeVisible();
  const id = sessionOf(page);

  await call(page, "stage");
  await expect(page.getByTestId("step-count")).toContainText("step 1");
  await call(page, "deploy");
  await expect(page.getByTestId("step-count")).toContainText("step 2");
  await expect(page.getByRole("heading", { name: "Step 2: deploy()" })).toBeVisible();
  await expect(page.locator(".play-step pre").first()).toContainText('"status": "timeout"');
  await expect(page.getByTestId("picture")).toHaveAttribute("data-step", "2");

  // Live: no store route, no body, element or storage holds the truth or the family.
  for (const url of asked) expect(url, "no store route while the episode runs").not.toMatch(STORE_ROUTES);
  const bodies = await Promise.all(
    answers.filter((a) => new URL(a.url()).pathname.startsWith("/api/")).map(async (a) => [a.url(), await a.text()]),
  );
  expect(bodies.map(([url]) => new URL(url).pathname)).toEqual([
    "/api/sessions",
    `/api/sessions/${id}/step`,
    `/api/sessions/${id}/step`,
  ]);
  expect(bodies[2][1], "the bodies were read").toContain('"status":"timeout"');
  for (const [url, body] of bodies) {
    for (const secret of HIDDEN) expect(body, `${url} holds ${secret}`).not.toContain(secret);
  }
  await expect(page.locator("[data-truth]")).toHaveCount(0);
  const html = await page.content();
  for (const secret of HIDDEN) expect(html, `the page holds ${secret}`).not.toContain(secret);
  const stored = await page.evaluate(() => ({
    session: Object.keys(sessionStorage).filter((k) => k !== "opsgym.token"),
    local: Object.keys(localStorage),
  }));
  expect(stored).toEqual({ session: [], local: [] });
  await expectAccessible(page, "play: mid-episode");

  await page.getByLabel("Policy").selectOption("oracle");
  await page.getByRole("button", { name: "Run to the end" }).click();
  const ended = page.getByRole("region", { name: "The episode has ended" });
  await expect(ended).toBeVisible();

  const view = await (await page.request.get(`/api/sessions/${id}`)).json();
  const { lies } = await (await page.request.get(`/api/sessions/${id}/record`)).json();
  expect(view.done && view.family).toBe("deploy_timeout");
  await expect(ended.locator(`[data-outcome="${view.verdict.outcome}"]`)).toBeVisible();
  await expect(ended.locator("[data-invariant]")).toHaveCount(view.verdict.invariants.length);
  await expect(ended.locator("[data-truth] [data-testid=family]")).toHaveText("deploy_timeout");
  await expect(ended.locator("[data-truth] [data-testid=truth]")).toContainText('"deploy_committed": true');
  await expect(ended.getByTestId("replay")).toHaveAttribute("data-match", "true");
  await expect(ended.getByTestId("replay")).toContainText("✓");

  // The lie told at the deploy step is marked where it was told, and settled where a call
  // reconciled (or trusted) it.
  const [lie] = lies.told;
  expect([lie.told_at, lie.told_by]).toEqual([2, "deploy"]);
  const told = page.locator(`.step-log li[data-step="2"] [data-truth] [data-lie-told="${lie.kind}"]`);
  await expect(told).toHaveAttribute("data-status", lie.status);
  await expect(told).toContainText(lie.status);
  expect(["reconciled", "trusted"]).toContain(lie.status);
  await expect(page.locator(`.step-log li[data-step="${lie.settled_at}"] [data-truth] [data-lie-settled]`)).toHaveAttribute(
    "data-lie-settled",
    lie.status,
  );

  // The chips sum to the return.
  const chips = page.getByRole("list", { name: "Reward by component" }).locator("[data-value]");
  const values = await chips.evaluateAll((els) => els.map((el) => Number(el.getAttribute("data-value"))));
  expect(values.length).toBeGreaterThan(1);
  expect(Math.abs(values.reduce((a, b) => a + b, 0) - view.return)).toBeLessThan(1e-6);

  await expectAccessible(page, "play: an ended episode");
  await expectNoOverflow(page, "play: an ended episode");
});

test("a blank seed is drawn by the server and shown only once the episode ends", async ({ page }) => {
  const id = await start(page, "env=release&scenario=mixed&split=dev");
  await expect(page.getByText("drawn by the server, shown once the episode ends")).toBeVisible();
  expect((await (await page.request.get(`/api/sessions/${id}`)).json()).seed).toBeNull();
  await call(page, "inspect");
  await expect(page.getByTestId("step-count")).toContainText("step 1");
  const live = await page.content();
  await expectNoOverflow(page, "play: mid-episode");

  // Completing at once is refused by the judge: the verdict lists the failed invariants first.
  await call(page, "complete");
  const ended = page.getByRole("region", { name: "The episode has ended" });
  await expect(ended).toBeVisible();
  const view = await (await page.request.get(`/api/sessions/${id}`)).json();
  expect(Number.isInteger(view.seed) && view.seed % 10).toBe(8); // a dev seed
  expect(live).not.toContain(String(view.seed));
  await expect(ended.getByTestId("seed")).toContainText(`seed ${view.seed} (drawn by the server)`);
  const held = await ended.locator("[data-invariant]").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-held")));
  expect(held).toContain("false");
  expect(held.indexOf("true") === -1 || held.lastIndexOf("false") < held.indexOf("true")).toBe(true);
  await expect(ended.getByTestId("replay")).toHaveAttribute("data-match", "true");
  expect(new URL(page.url()).search).not.toContain(String(view.seed));
});

test("the setup and the session live in the URL; the keyboard alone starts and plays", async ({ page }) => {
  await page.goto("/ui/play");
  await expect(page.getByLabel("World")).toHaveValue("fleet");
  await expect(page.getByLabel("Scenario")).toHaveValue("mixed");

  // The keyboard: world, split and seed, then start.
  await page.getByLabel("World").focus();
  await page.keyboard.press("ArrowDown"); // fleet → oversight
  await page.keyboard.press("Tab");
  await page.keyboard.press("Tab");
  await expect(page.getByLabel("Split")).toBeFocused();
  await page.keyboard.press("ArrowDown"); // the seed's → train
  await page.keyboard.press("Tab");
  await page.keyboard.type("10");
  await expect(page).toHaveURL(/env=oversight&scenario=mixed&split=train&seed=10/);
  await page.reload();
  await expect(page.getByLabel("Seed")).toHaveValue("10");
  await page.getByLabel("Config").focus();
  await page.keyboard.press("Tab");
  await expect(page.getByRole("button", { name: "Start episode" })).toBeFocused();
  await page.keyboard.press("Enter");
  await expect(page.getByRole("heading", { name: "oversight · mixed" })).toBeVisible();
  const id = sessionOf(page);

  // A call by keyboard: the tool, its fields, Enter.
  await page.getByLabel("Tool", { exact: true }).focus();
  await page.keyboard.press("End"); // hold_release
  await expect(page.getByLabel("Tool", { exact: true })).toHaveValue("hold_release");
  await expect(page).toHaveURL(/tool=hold_release/);
  await page.getByLabel("reason_code").focus();
  await page.keyboard.press("ArrowDown"); // await_rework
  await page.keyboard.press("Tab"); // the JSON switch
  await page.keyboard.press("Tab");
  await expect(page.getByRole("button", { name: "Call hold_release" })).toBeFocused();
  await page.keyboard.press("Enter");
  await expect(page.getByTestId("step-count")).toContainText("step 1");

  // A reload finds the session on the server (nothing was stored in the browser); back returns
  // to the setup.
  await page.reload();
  await expect(page.getByRole("link", { name: '#1 hold_release(reason_code="await_rework")' })).toBeVisible();
  await page.getByRole("link", { name: "Start", exact: true }).click();
  await expect(page).toHaveURL(/step=0/);
  await expect(page.getByRole("heading", { name: "The start" })).toBeVisible();
  await page.goBack();
  await expect(page.getByRole("heading", { name: /^Step 1/ })).toBeVisible();
  await page.getByRole("link", { name: "New episode" }).click();
  await expect(page.getByRole("button", { name: "Start episode" })).toBeVisible();
  await expect(page.getByLabel("Seed")).toHaveValue("10");
  await page.goBack();
  expect(sessionOf(page)).toBe(id);
  await expectNoOverflow(page, "play: the setup form");
});
