import { fireEvent, render, screen } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";
import { ToolForm } from "./ToolForm";
import type { ToolSchema } from "./toolSchema";

const tool: ToolSchema = {
  name: "inspect_flight_recorder",
  description: "Dump one rank's PyTorch flight recorder.",
  parameters: {
    type: "object",
    required: ["rank"],
    properties: {
      rank: { type: "integer", minimum: 0, maximum: 31, description: "Global rank 0-31." },
      last: { type: "integer", minimum: 1, maximum: 2000, default: 4 },
      target: { type: "string", enum: ["all", "deploy"], default: "all" },
    },
  },
};

describe("ToolForm", () => {
  it("renders a labelled control per argument, defaults prefilled, hints attached", () => {
    render(<ToolForm tool={tool} errors={[]} busy={false} onCall={() => {}} />);
    const rank = screen.getByLabelText("rank");
    expect(rank).toHaveProperty("type", "number");
    expect(rank.getAttribute("aria-describedby")).toBeTruthy();
    expect(document.getElementById(rank.getAttribute("aria-describedby")!)?.textContent).toBe("Global rank 0-31. (0 to 31)");
    expect(screen.getByLabelText("last")).toHaveProperty("value", "4");
    expect(screen.getByLabelText("target").tagName).toBe("SELECT");
  });

  it("sends the values as typed, past the schema's bounds too", () => {
    const onCall = vi.fn();
    render(<ToolForm tool={tool} errors={[]} busy={false} onCall={onCall} />);
    fireEvent.change(screen.getByLabelText("rank"), { target: { value: "99" } });
    fireEvent.click(screen.getByRole("button", { name: "Call inspect_flight_recorder" }));
    expect(onCall).toHaveBeenCalledWith({ rank: 99, last: 4, target: "all" });
  });

  it("shows the server's message beside the field it names, and the rest below", () => {
    const errors = [
      { field: "args.rank", message: "Input should be less than or equal to 31" },
      { field: "tool", message: "no such tool" },
    ];
    render(<ToolForm tool={tool} errors={errors} busy={false} onCall={() => {}} />);
    const rank = screen.getByLabelText("rank");
    expect(rank.getAttribute("aria-invalid")).toBe("true");
    expect(rank.getAttribute("aria-describedby")).toContain("error");
    expect(document.activeElement).toBe(rank);
    expect(screen.getByText("Input should be less than or equal to 31").getAttribute("data-field")).toBe("rank");
    expect(screen.getByText("tool: no such tool")).toBeTruthy();
  });

  it("takes the arguments as JSON, and says when they are not an object", () => {
    const onCall = vi.fn();
    render(<ToolForm tool={tool} errors={[]} busy={false} onCall={onCall} />);
    fireEvent.click(screen.getByLabelText("Edit the arguments as JSON"));
    const box = screen.getByLabelText(/Arguments/);
    expect((box as HTMLTextAreaElement).value).toBe('{"last":4,"target":"all"}');
    fireEvent.change(box, { target: { value: "[1]" } });
    fireEvent.click(screen.getByRole("button", { name: "Call inspect_flight_recorder" }));
    expect(onCall).not.toHaveBeenCalled();
    expect(screen.getByText(/must be a JSON object/)).toBeTruthy();
    fireEvent.change(box, { target: { value: '{"rank": "x"}' } });
    fireEvent.click(screen.getByRole("button", { name: "Call inspect_flight_recorder" }));
    expect(onCall).toHaveBeenCalledWith({ rank: "x" });
  });
});
