// The episode viewer: a stored (ended) episode told step by step. The timeline puts what each
// tool reported beside the truth it changed, marks where lies were told and where they were
// trusted or reconciled, and pays the reward by component; the verdict lists failed invariants
// first; the replay badge says whether the record is what its calls make. The selected step
// lives in the URL (?step=7): it deep-links, and back/forward walk the steps clicked.
import { useEffect, useMemo } from "react";
import { useSearchParams } from "wouter";
import { useOutcomeKind } from "../api/hooks";
import { ErrorNote, Loading } from "../components/ErrorNote";
import { downloadJson } from "../episodes/download";
import { LiesPanel } from "../episodes/LiesPanel";
import { useReplayCheck, useStoredEpisode, useTimelineWindow, type StoredEpisode } from "../episodes/queries";
import { ReplayBadge, ReplayDifference } from "../episodes/ReplayBadge";
import { RewardPanel } from "../episodes/RewardPanel";
import { StepDetail } from "../episodes/StepDetail";
import { clampStep, lieMarks, stepSummaries } from "../episodes/steps";
import { Timeline } from "../episodes/Timeline";
import { VerdictPanel } from "../episodes/VerdictPanel";
import { OutcomeBadge } from "../outcomes";
import "../episodes/Episodes.css";

export default function EpisodeView({ id }: { id: string }) {
  const episodeId = Number(id);
  if (!/^\d+$/.test(id) || !Number.isSafeInteger(episodeId)) {
    return (
      <section>
        <h1>Episode {id}</h1>
        <p className="error">“{id}” is not an episode id: ids are whole numbers.</p>
      </section>
    );
  }
  return <Viewer id={episodeId} />;
}

function Viewer({ id }: { id: number }) {
  const stored = useStoredEpisode(id);
  const replay = useReplayCheck(id);
  return (
    <section className="episode-view">
      <h1>Episode #{id}</h1>
      <ErrorNote error={stored.error} />
      {stored.isPending && <Loading what="the episode" />}
      {stored.data && <Loaded id={id} stored={stored.data} replay={replay} />}
    </section>
  );
}

/** j and k anywhere on the page (but in a text field) move to the next and previous step. */
function useStepKeys(move: (by: number) => void) {
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (event.altKey || event.ctrlKey || event.metaKey || event.defaultPrevented) return;
      const target = event.target as HTMLElement | null;
      if (target?.closest("input, select, textarea, [contenteditable='true']")) return;
      const by = event.key === "j" ? 1 : event.key === "k" ? -1 : 0;
      if (!by) return;
      event.preventDefault();
      move(by);
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [move]);
}

interface LoadedProps {
  id: number;
  stored: StoredEpisode;
  replay: ReturnType<typeof useReplayCheck>;
}

function Loaded({ id, stored, replay }: LoadedProps) {
  const { record, lies } = stored;
  const events = record.events;
  const total = events.length;
  const [params, setParams] = useSearchParams();
  const selected = clampStep(params.get("step"), total);
  const kind = useOutcomeKind();
  const summary = useMemo(() => stepSummaries(events), [events]);
  const marks = useMemo(() => lieMarks(lies.told), [lies.told]);
  const view = useTimelineWindow(id, selected, total > 0);
  const replayed = view.data?.steps.find((s) => s.step === selected);
  const base = `/episodes/${id}`;
  const difference = replay.data?.first_difference ?? null;

  // A step clicked (or linked) is a history entry, so back returns to the one before; stepping
  // by key replaces the entry, so that back does not replay every key press.
  const select = (step: number, how: "push" | "replace") => {
    if (step === selected) return;
    const next = new URLSearchParams(params);
    next.set("step", String(step));
    setParams(next, { replace: how === "replace" });
  };
  useStepKeys((by) => select(Math.min(Math.max(selected + by, 1), total), "replace"));

  const outcome = record.verdict?.outcome ?? null;
  return (
    <>
      <p className="ep-meta">
        <strong>{record.env}</strong> · {record.scenario}
        {view.data && view.data.family !== record.scenario && <> → {view.data.family}</>} · seed {record.seed} ·{" "}
        {total} steps{record.max_steps !== null && ` of ${record.max_steps}`} · reward paid at the {record.reward_timing}
        {record.token_source !== "fixed" && ` · tokens counted by the ${record.token_source}`}
      </p>
      <div className="row ep-badges">
        <OutcomeBadge outcome={outcome} kind={kind(record.env, outcome)} />
        <ReplayBadge check={replay.data} error={replay.error} />
        <button type="button" onClick={() => downloadJson(record, `opsgym-episode-${id}.json`)}>
          Download the record (JSON)
        </button>
      </div>
      {difference && <ReplayDifference difference={difference} base={base} />}

      <div className="ep-cards">
        <VerdictPanel verdict={record.verdict} kind={kind(record.env, outcome)} />
        <RewardPanel rewards={record.rewards} total={record.return} />
        <LiesPanel lies={lies.told} base={base} />
      </div>

      <h2 id="timeline-title">Timeline</h2>
      <p className="muted small">
        Select a step; <kbd>j</kbd>/<kbd>k</kbd> move to the next and previous one, and in the timeline <kbd>↑</kbd>/
        <kbd>↓</kbd>, <kbd>PageUp</kbd>/<kbd>PageDown</kbd>, <kbd>Home</kbd>/<kbd>End</kbd>. Marks: ⚑ a lie told, ⚠ a
        lie trusted, ✓ a lie reconciled, ✗ where the replay differs, ⊘ a rejected call, ≠ a report that contradicts the
        truth.
      </p>
      {total === 0 ? (
        <p className="muted">The episode ended before its first call.</p>
      ) : (
        <>
          <Timeline
            total={total}
            summary={summary}
            marks={marks}
            differsAt={difference && difference.step > 0 ? difference.step : null}
            selected={selected}
            onSelect={select}
          />
          <StepDetail
            env={record.env}
            event={events[selected - 1]}
            summary={summary(selected - 1)}
            total={total}
            lies={lies.told}
            told={marks.told.get(selected) ?? []}
            settled={marks.settled.get(selected) ?? []}
            difference={difference}
            replayed={replayed}
            replayError={view.error}
          />
        </>
      )}
    </>
  );
}
