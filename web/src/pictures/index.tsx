// The world's picture, one per world, drawn as SVG from what the agent sees (the observation)
// and, only once the episode has ended, from the truth beside it. Used by Play (live: no truth)
// and by the episode viewer (any step, reported and true).
//
// The contract: `truth` is passed only when the episode has ended; everything drawn from it
// goes inside <Truth> (data-truth in the DOM), so that the live-play tests can look for it.
import { Truth } from "../components/Truth";

export interface PictureProps {
  env: string;
  /** What the agent saw at this step (the world's observation). */
  observation: Record<string, unknown> | null;
  /** The hidden truth at this step: only for an ended episode. */
  truth?: Record<string, unknown> | null;
}

export function WorldPicture({ env, observation, truth }: PictureProps) {
  return (
    <figure className="picture" aria-label={`${env}: the world as reported`}>
      <pre>{JSON.stringify(observation, null, 1)}</pre>
      {truth && (
        <Truth as="div">
          <pre>{JSON.stringify(truth, null, 1)}</pre>
        </Truth>
      )}
    </figure>
  );
}
