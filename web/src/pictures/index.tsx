// The world's picture, one per world, drawn as SVG from what the agent sees (the observation)
// and, only once the episode has ended, from the truth beside it. Used by Play (live: no truth)
// and by the episode viewer (any step, reported and true).
//
// The contract: `truth` is passed only when the episode has ended; everything drawn from it
// goes inside <Truth> (data-truth in the DOM), so that the live-play tests can look for it.
// `lies` (an ended episode's lie ledger) is optional: with it the true side lists every lie told
// up to the step drawn and what became of it; without it, those the step's truth marks.
//
// Each picture is memoised and drawn from fixed geometry: a step that changes nothing redraws
// nothing, and none measures the DOM.
import { memo, type ReactNode } from "react";
import { Truth } from "../components/Truth";
import "./pictures.css";
import type { Lie } from "./common";
import { FleetPicture } from "./Fleet";
import type { FleetObservation, FleetTruth } from "./fleetTypes";
import { OversightPicture, type OversightObservation, type OversightTruth } from "./Oversight";
import { ReleasePicture, type ReleaseObservation, type ReleaseTruth } from "./Release";

export interface PictureProps {
  env: string;
  /** What the agent saw at this step (the world's observation). */
  observation: Record<string, unknown> | null;
  /** The hidden truth at this step: only for an ended episode. */
  truth?: Record<string, unknown> | null;
  /** The ended episode's lies (``Lies.told`` of its record or timeline): only with `truth`. */
  lies?: Lie[] | null;
}

export const WorldPicture = memo(function WorldPicture({ env, observation, truth, lies }: PictureProps) {
  if (!observation) {
    return <p className="muted">No observation to draw.</p>;
  }
  const picture = pictureOf(env, observation, truth ?? null, truth ? (lies ?? null) : null);
  return (
    <figure
      className="picture"
      aria-label={`${env}: the world as reported${truth ? ", and the truth" : ""}`}
      data-testid="world-picture"
      data-env={env}
    >
      {picture ?? (
        // A world the workbench has no picture for: its observation (and truth) as they are.
        <>
          <pre>{JSON.stringify(observation, null, 1)}</pre>
          {truth && (
            <Truth as="div">
              <pre>{JSON.stringify(truth, null, 1)}</pre>
            </Truth>
          )}
        </>
      )}
    </figure>
  );
});

// The observation and truth are open shapes in the API (each world defines its own); each
// picture states the fields it reads in its world's types.
function pictureOf(
  env: string,
  observation: Record<string, unknown>,
  truth: Record<string, unknown> | null,
  lies: Lie[] | null,
): ReactNode {
  switch (env) {
    case "release":
      return (
        <ReleasePicture
          observation={observation as unknown as ReleaseObservation}
          truth={truth as unknown as ReleaseTruth | null}
          lies={lies}
        />
      );
    case "fleet":
      return (
        <FleetPicture
          observation={observation as unknown as FleetObservation}
          truth={truth as unknown as FleetTruth | null}
          lies={lies}
        />
      );
    case "oversight":
      return (
        <OversightPicture
          observation={observation as unknown as OversightObservation}
          truth={truth as unknown as OversightTruth | null}
          lies={lies}
        />
      );
    default:
      return null;
  }
}
