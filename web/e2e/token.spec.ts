// A server that wants a token (its own, started here beside the seeded one): the workbench
// asks for it in a dialog, keeps it in sessionStorage only, and sends it in a header only.
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, expectAccessible, expectNoOverflow, test } from "./fixtures";
import { expectRefusals } from "./refusals";

const PORT = Number(process.env.E2E_TOKEN_PORT ?? 8779);
const ORIGIN = `http://127.0.0.1:${PORT}`;
const TOKEN = `e2e-${randomBytes(16).toString("hex")}`;
const EVALUATION = "token-check";

let server: ChildProcess | undefined;
let folder = "";

async function call(path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(ORIGIN + path, { ...init, headers: { Authorization: `Bearer ${TOKEN}`, "content-type": "application/json" } });
}

test.beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), "opsgym-token-"));
  const python = process.env.PYTHON ?? "../.venv/bin/python";
  const args = ["-m", "opsgym", "serve", "--port", String(PORT), "--db", join(folder, "store.sqlite"), "--runs-dir", join(folder, "runs")];
  // The token goes in through the environment (OPSGYM_TOKEN), not the command line.
  server = spawn(python, args, { env: { ...process.env, OPSGYM_TOKEN: TOKEN }, stdio: "ignore" });
  await expect.poll(async () => (await fetch(`${ORIGIN}/health`).catch(() => null))?.status, { timeout: 30_000 }).toBe(200);
  const started = await call("/api/evaluations", {
    method: "POST",
    body: JSON.stringify({ env: "release", policies: ["oracle"], episodes: 2, seeds: "public", name: EVALUATION }),
  });
  expect(started.status).toBe(202);
  await expect.poll(async () => (await (await call(`/api/evaluations/${EVALUATION}`)).json()).status, { timeout: 30_000 }).toBe("done");
});

test.afterAll(() => {
  server?.kill();
  rmSync(folder, { recursive: true, force: true });
});

test("the token dialog works and the token never appears in a URL or localStorage", async ({ page, problems }) => {
  const refusals = expectRefusals(page, problems, 401);
  const urls: string[] = [];
  const sent: string[] = [];
  page.on("request", (request) => {
    urls.push(request.url());
    if (new URL(request.url()).pathname.startsWith("/api/")) sent.push(request.headers().authorization ?? "none");
  });

  await page.goto(`${ORIGIN}/ui/evaluations`);
  const dialog = page.getByRole("dialog", { name: "Server token" });
  await expect(dialog).toBeVisible();
  await expectAccessible(page, "the token dialog");

  // A wrong token is refused too: the dialog comes back.
  await dialog.getByLabel("Token").fill("not-the-token");
  await dialog.getByRole("button", { name: "Use token" }).click();
  await expect(dialog).toBeVisible();

  await dialog.getByLabel("Token").fill(TOKEN);
  await dialog.getByRole("button", { name: "Use token" }).click();
  await expect(dialog).toBeHidden();
  await expect(page.getByRole("button", { name: "Token ✓" })).toBeVisible();
  await expect(page.locator(`[data-evaluation="${EVALUATION}"]`)).toBeVisible();
  await page.getByRole("link", { name: EVALUATION }).click();
  await expect(page.locator('[data-policy="oracle"] [data-whisker]').first()).toBeVisible();
  await expectAccessible(page, "an evaluation read with the token");
  await expectNoOverflow(page, "an evaluation read with the token");

  // The tab keeps the token (sessionStorage) across a reload, and nothing else keeps it.
  await page.reload();
  await expect(page.locator('[data-policy="oracle"] [data-whisker]').first()).toBeVisible();
  await expect(dialog).toBeHidden();
  const stored = await page.evaluate(() => ({
    local: Object.entries(localStorage),
    session: sessionStorage.getItem("opsgym.token"),
  }));
  expect(stored.local).toEqual([]);
  expect(stored.session).toBe(TOKEN);

  expect(page.url()).not.toContain(TOKEN);
  expect(urls.filter((u) => u.includes(TOKEN))).toEqual([]);
  expect(sent).toContain(`Bearer ${TOKEN}`);
  refusals();
});
