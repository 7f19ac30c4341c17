import { expect, expectAccessible, expectNoOverflow, test } from "./fixtures";

test("home shows the worlds, the server's security mode and recent episodes", async ({ page }) => {
  await page.goto("/ui/");
  await expect(page.getByRole("heading", { name: "opsgym workbench" })).toBeVisible();
  await expect(page.getByTestId("security")).toContainText("loopback only");
  for (const world of ["release", "fleet", "oversight"]) {
    await expect(page.getByRole("heading", { name: new RegExp(`^${world}`) })).toBeVisible();
  }
  await expect(page.locator("[data-outcome]").first()).toBeVisible();
  await expect(page.getByRole("link", { name: /^#\d+$/ }).first()).toBeVisible();
  await expectAccessible(page, "home");
  await expectNoOverflow(page, "home");
});

test("the served pages carry a strict Content-Security-Policy", async ({ request }) => {
  const response = await request.get("/ui/episodes/1");
  expect(response.status()).toBe(200);
  expect(response.headers()["content-security-policy"]).toContain("default-src 'self'");
  expect(await response.text()).toContain('<div id="root">');
});

test("deep links and back/forward move between pages", async ({ page }) => {
  await page.goto("/ui/episodes");
  await expect(page.getByRole("link", { name: "Episodes" })).toHaveAttribute("aria-current", "page");
  await page.getByRole("link", { name: "Home" }).click();
  await expect(page).toHaveURL(/\/ui\/$/);
  await page.goBack();
  await expect(page).toHaveURL(/\/ui\/episodes$/);
  await page.goForward();
  await expect(page).toHaveURL(/\/ui\/$/);
});
