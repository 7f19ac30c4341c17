// The token dialog: opens when the server answers 401 (or from the header's button). The token
// lives in sessionStorage only: gone when the tab closes, never in a URL or localStorage.
import { useQueryClient } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";
import { token, UNAUTHORISED } from "../api/client";

export function TokenDialog() {
  const dialog = useRef<HTMLDialogElement>(null);
  const [value, setValue] = useState("");
  const client = useQueryClient();

  useEffect(() => {
    const open = () => {
      if (!dialog.current?.open) dialog.current?.showModal();
    };
    window.addEventListener(UNAUTHORISED, open);
    window.addEventListener("opsgym:token", open);
    return () => {
      window.removeEventListener(UNAUTHORISED, open);
      window.removeEventListener("opsgym:token", open);
    };
  }, []);

  const save = (event: React.FormEvent) => {
    event.preventDefault();
    if (value.trim()) token.set(value.trim());
    else token.clear();
    setValue("");
    dialog.current?.close();
    void client.invalidateQueries();
  };

  return (
    <dialog ref={dialog} aria-labelledby="token-title" className="token-dialog">
      <form onSubmit={save}>
        <h2 id="token-title">Server token</h2>
        <p>
          This server wants a bearer token (<code>opsgym serve --token</code>). It is kept in this
          tab only (sessionStorage) and sent in the Authorization header.
        </p>
        <label>
          Token
          <input
            type="password"
            name="token"
            autoComplete="off"
            value={value}
            onChange={(e) => setValue(e.target.value)}
          />
        </label>
        <div className="row">
          <button type="submit">Use token</button>
          <button type="button" onClick={() => dialog.current?.close()}>
            Cancel
          </button>
        </div>
      </form>
    </dialog>
  );
}

export function openTokenDialog() {
  window.dispatchEvent(new Event("opsgym:token"));
}
