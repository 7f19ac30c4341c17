// Everything drawn from an episode's hidden truth goes through <Truth>: it is marked in the DOM
// (data-truth) so that a test can look for it during live play, where it must never appear.
import type { ReactNode } from "react";

export function Truth({ children, as = "span", className }: { children: ReactNode; as?: "span" | "div" | "section" | "g"; className?: string }) {
  const Tag = as;
  return (
    <Tag data-truth="" className={className}>
      {children}
    </Tag>
  );
}
