import { render, screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { VerdictPanel } from "./VerdictPanel";

describe("the verdict", () => {
  const verdict = {
    accepted: false,
    outcome: "unsafe",
    invariants: [
      { name: "schema_compatible", held: true, reason: "schema v2 serves every live version" },
      { name: "fresh_health_evidence", held: false, reason: "no healthy report after the change" },
      { name: "no_data_corruption", held: true, reason: "data intact" },
      { name: "ambiguity_resolved", held: false, reason: "the deploy was never inspected" },
    ],
    grade: 0.25,
  };

  it("lists the failed invariants first and folds the passed ones", () => {
    const { container } = render(<VerdictPanel verdict={verdict} kind="harmful" />);
    const failed = within(screen.getByRole("list", { name: "Failed invariants" })).getAllByRole("listitem");
    expect(failed.map((li) => li.dataset.invariant)).toEqual(["fresh_health_evidence", "ambiguity_resolved"]);
    const folded = container.querySelector("details.ep-passed") as HTMLDetailsElement;
    expect(folded.open).toBe(false);
    expect(folded.querySelector("summary")?.textContent).toBe("2 passed");
    expect([...folded.querySelectorAll("li")].map((li) => li.dataset.invariant)).toEqual(["schema_compatible", "no_data_corruption"]);
    expect(screen.getByText(/More from the judge \(grade\)/)).toBeTruthy();
    expect(container.querySelector("[data-truth]")).not.toBeNull();
  });

  it("says so when the judge never ruled", () => {
    render(<VerdictPanel verdict={null} kind="unfinished" />);
    expect(screen.getByText(/cut short before the judge ruled/)).toBeTruthy();
  });
});
