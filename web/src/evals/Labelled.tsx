// A control with its label beside it, tied by id rather than by nesting: a select nested in its
// label would take its options' text into its accessible name.
import { useId, type ReactNode } from "react";

export function Labelled({ label, children }: { label: ReactNode; children: (id: string) => ReactNode }) {
  const id = useId();
  return (
    <span className="labelled">
      <label htmlFor={id}>{label}</label>
      {children(id)}
    </span>
  );
}
