import { useSyncExternalStore, type ReactNode } from "react";
import { Link, useRoute } from "wouter";
import { token, TOKEN_CHANGED } from "../api/client";
import { openTokenDialog, TokenDialog } from "./TokenDialog";

const PAGES: [string, string][] = [
  ["/", "Home"],
  ["/play", "Play"],
  ["/episodes", "Episodes"],
  ["/evaluations", "Evaluations"],
  ["/training", "Training"],
];

function NavLink({ href, label }: { href: string; label: string }) {
  const [exact] = useRoute(href);
  const [nested] = useRoute(href === "/" ? "/__never" : `${href}/*`);
  const active = exact || nested;
  return (
    <Link href={href} aria-current={active ? "page" : undefined} className={active ? "active" : undefined}>
      {label}
    </Link>
  );
}

function subscribe(onChange: () => void) {
  window.addEventListener(TOKEN_CHANGED, onChange);
  return () => window.removeEventListener(TOKEN_CHANGED, onChange);
}

export function Layout({ children }: { children: ReactNode }) {
  const hasToken = useSyncExternalStore(subscribe, () => token.get() !== null);
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <span className="brand">opsgym</span>
        <nav aria-label="Pages">
          {PAGES.map(([href, label]) => (
            <NavLink key={href} href={href} label={label} />
          ))}
        </nav>
        <button type="button" className="quiet" onClick={openTokenDialog}>
          {hasToken ? "Token ✓" : "Token"}
        </button>
      </header>
      <main id="main">{children}</main>
      <TokenDialog />
    </>
  );
}
