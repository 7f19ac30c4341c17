// The world pictures in the episode viewer (/ui/episodes/{id}?step=N), drawn from stored episodes
// of the seeded store (e2e/serve.py): the fleet's 32 rank tiles, 2 spines and spares with the
// faulty rank marked after the end; the oversight board's proposals, S1–S5 and gauges; the
// release's pools, split requested beside observed and health badges with their age.
import type { APIRequestContext } from "@playwright/test";
import type { Schemas } from "../src/api/client";
import { expect, expectAccessible, expectNoOverflow, fixtures, test } from "./fixtures";

type Row = Schemas["EpisodeRow"];
type Stored = Schemas["StoredEpisode"];

const evaluationOf = (env: string) => Object.entries(fixtures().evaluations).find(([, e]) => e === env)![0];

async function episodes(request: APIRequestContext, env: string, policy: string): Promise<Row[]> {
  const response = await request.get(`/api/episodes?evaluation=${evaluationOf(env)}&policy=${policy}&limit=100`);
  expect(response.ok()).toBe(true);
  return (await response.json()) as Row[];
}

async function stored(request: APIRequestContext, id: number): Promise<Stored> {
  const response = await request.get(`/api/episodes/${id}`);
  expect(response.ok()).toBe(true);
  return (await response.json()) as Stored;
}

/** The agent's view after a step, as the viewer draws it (the replay's). */
async function observationAt(request: APIRequestContext, id: number, step: number): Promise<Record<string, unknown>> {
  const response = await request.get(`/api/episodes/${id}/timeline?start=${step - 1}&limit=1`);
  expect(response.ok()).toBe(true);
  const timeline = (await response.json()) as Schemas["Timeline"];
  return timeline.steps[0].observation!;
}

test("the fleet picture: 32 rank tiles, 2 spines, the spares, and after the end the faulty rank", async ({
  page,
  request,
}) => {
  // an episode with a rank at fault (out of memory, a lost GPU, the desync), shown at its last step
  let chosen: { id: number; last: number; ranks: number[] } | undefined;
  for (const row of await episodes(request, "fleet", "oracle")) {
    const { record } = await stored(request, row.id);
    const facts = record.events.at(-1)!.truth.facts as {
      present: string[];
      oom_ranks: number[];
      lost_rank: number;
      desync_rank: number;
    };
    const ranks = [
      ...(facts.present.includes("oom") ? facts.oom_ranks : []),
      ...(facts.present.includes("gpu_lost") ? [facts.lost_rank] : []),
      ...(facts.present.includes("desync") ? [facts.desync_rank] : []),
    ];
    if (ranks.length) {
      chosen = { id: row.id, last: record.events.length, ranks: [...new Set(ranks)].sort((a, b) => a - b) };
      break;
    }
  }
  expect(chosen, "a stored fleet episode with a faulty rank").toBeDefined();
  const { id, last, ranks } = chosen!;

  await page.goto(`/ui/episodes/${id}?step=${last}`);
  const picture = page.getByTestId("world-picture");
  const reported = picture.getByTestId("fleet-reported");
  await expect(reported.getByTestId("rank-tile")).toHaveCount(32);
  await expect(reported.getByTestId("spine")).toHaveCount(2);
  await expect(reported.getByTestId("leaf")).toHaveCount(2);
  await expect(reported.getByTestId("spare")).toHaveCount(2);
  await expect(reported.getByTestId("throughput")).toBeVisible();

  const truth = picture.locator("[data-truth]").getByTestId("fleet-true");
  await expect(truth.getByTestId("rank-tile")).toHaveCount(32);
  const faulty = truth.locator("[data-testid=rank-tile][data-fault]");
  await expect
    .poll(() =>
      faulty.evaluateAll((tiles) => tiles.map((t) => Number(t.getAttribute("data-rank"))).sort((a, b) => a - b)),
    )
    .toEqual(ranks);
  // nothing of the truth on the reported side
  await expect(reported.locator("[data-fault]")).toHaveCount(0);
  await expectAccessible(page, "the fleet picture");

  const drawer = picture.getByTestId("evidence-drawer");
  await drawer.locator("summary").click();
  const list = drawer.getByTestId("evidence-list");
  await expect(list).toBeVisible();
  await expect(list.locator("li").first()).toContainText("NCCL logs");
  // drawn a window at a time: scrolled to its end, the drawer draws its last row
  const rows = Number(await list.locator("ul").getAttribute("data-rows"));
  await list.evaluate((el) => el.scrollTo(0, el.scrollHeight));
  await expect(list.locator(`li[data-index="${rows - 1}"]`)).toBeAttached();
  await expectAccessible(page, "the fleet picture with its evidence drawer open");
  await expectNoOverflow(page, "the fleet picture");
});

test("the oversight board: the proposals by phase, S1–S5, the gauges, and the truth after the end", async ({
  page,
  request,
}) => {
  const [row] = await episodes(request, "oversight", "oracle");
  const { record } = await stored(request, row.id);
  const last = record.events.length;
  const observation = (await observationAt(request, row.id, last)) as {
    proposals: unknown[];
    history: unknown[];
    workers: unknown[];
  };
  const violated = record.events.at(-1)!.truth.violated as string[];

  await page.goto(`/ui/episodes/${row.id}?step=${last}`);
  const picture = page.getByTestId("world-picture");
  const board = picture.getByTestId("oversight-reported");
  await expect(board.getByTestId("phase")).toHaveCount(3);
  await expect(board.getByTestId("proposal")).toHaveCount(observation.proposals.length);
  await expect(picture.getByTestId("proposal-card")).toHaveCount(
    observation.proposals.length + observation.history.length,
  );
  await expect(picture.getByTestId("rule")).toHaveText([/^. S1/, /^. S2/, /^. S3/, /^. S4/, /^. S5/]);
  await expect(picture.getByTestId("gauges").first().getByTestId("gauge")).toHaveCount(5);
  await expect(picture.getByTestId("workers").first().locator("tbody tr")).toHaveCount(observation.workers.length);

  const truth = picture.locator("[data-truth]");
  await expect(truth.getByTestId("truth-rule")).toHaveCount(5);
  await expect(truth.locator("[data-testid=truth-rule][data-violated=true]")).toHaveCount(violated.length);
  await expectAccessible(page, "the oversight board");
  await expectNoOverflow(page, "the oversight board");
});

test("the release picture: the pools, the split requested beside observed, health badges with their age", async ({
  page,
  request,
}) => {
  // a naive episode whose last green report is stale (it trusts a cached healthy answer given
  // after traffic moved: the seeded store's stale_health seeds), at its last step
  let shown: { id: number; last: number; obs: Record<string, unknown> } | undefined;
  for (const row of await episodes(request, "release", "naive")) {
    const obs = await observationAt(request, row.id, row.steps);
    const green = (obs.health as Record<string, { checked_at: number } | null>).green;
    if (green && green.checked_at < (obs.last_change as Record<string, number>).green) {
      shown = { id: row.id, last: row.steps, obs };
      break;
    }
  }
  expect(shown, "a stored release episode with a stale health report").toBeDefined();
  const { id, last, obs } = shown!;
  const health = obs.health as Record<string, { checked_at: number } | null>;
  const changed = obs.last_change as Record<string, number>;

  await page.goto(`/ui/episodes/${id}?step=${last}`);
  const reported = page.getByTestId("world-picture").getByTestId("release-reported");
  await expect(reported.getByTestId("release-pool-blue")).toBeVisible();
  await expect(reported.getByTestId("release-pool-green")).toBeVisible();
  await expect(reported.getByTestId("split-requested")).toHaveAttribute(
    "data-percent",
    String(obs.requested_green_percent),
  );
  await expect(reported.getByTestId("split-observed")).toHaveAttribute(
    "data-percent",
    String(obs.observed_green_percent ?? ""),
  );
  for (const pool of ["blue", "green"]) {
    const badge = reported.getByTestId(`health-${pool}`);
    const report = health[pool];
    if (!report) {
      await expect(badge).toHaveAttribute("data-status", "none");
      continue;
    }
    await expect(badge).toHaveAttribute("data-age", String((obs.clock as number) - report.checked_at));
    const stale = report.checked_at < changed[pool];
    await expect(badge).toHaveAttribute("data-stale", String(stale));
    await expect(reported.getByTestId(`stale-${pool}`)).toHaveCount(stale ? 1 : 0);
  }
  await expect(reported.getByTestId("stale-green")).toContainText("stale");
  await expect(page.locator("[data-truth]").getByTestId("release-true")).toBeVisible();
  await expectAccessible(page, "the release picture");
  await expectNoOverflow(page, "the release picture");
});
