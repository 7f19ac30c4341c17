"""The store: episodes, their events, evaluations and training runs in one SQL database.

```python
from opsgym.store import open_store
with open_store() as store:                    # $OPSGYM_DB, else a SQLite file in the user's
    ep = opsgym.run("release", "nominal", 3)   # data directory; or a path, or any SQLAlchemy
    i = store.add_episode(ep.record(), policy="oracle", split="test")   # URL
    opsgym.replay(store.episode_record(i)).match       # True: the record comes back exactly
```

``open_store("runs/db.sqlite")``, ``open_store("postgresql://user:pw@host/db")`` (psycopg 3,
``pip install opsgym[postgres]``). Opening applies the Alembic migrations shipped in
``opsgym/store/migrations``; an unreachable or malformed URL is a one-line :class:`StoreError`.

Tables (:mod:`opsgym.store.models`):

* ``episodes``: one row per episode: env, scenario, the drawn family, seed, split, policy,
  trial, outcome, acceptance, verdict, return and reward by component, steps, tokens and their
  source, downtime cost, lies told/trusted/reconciled, reward timing, the record's header, root
  and final hash. Unique per (evaluation, policy, scenario, seed, trial).
* ``events``: one row per episode, two JSON arrays in step order: ``steps`` (each call, its
  report, the reward paid, the clock, the event's hash) and ``truth_hidden`` (the hidden state of
  the world after each step). **The truth is hidden**: it is for judges, audits and inspection
  after the fact, and must never be served to an agent while an episode runs.
* ``evaluations``: name, config, status (running, done, failed, interrupted), aggregates, and,
  once finished, its seal: the manifest of its episodes and the root hash over it
  (:mod:`opsgym.store.seal`). A running evaluation names its process; one whose process died
  on this host reads ``interrupted`` (:mod:`opsgym.store.owner`), and any of them resumes
  under its name, unless its episodes no longer match its seal.
* ``training_runs``: name, kind, env, config, status, curves, checkpoint.
* ``training_jobs``: training started over HTTP: name (its run's), kind, env, config, status
  (queued, running, stopping, succeeded, failed, stopped, lost), folder, pid and the process's
  start time, exit code, error, times.

Guarantees: an episode is written in one transaction, with all its events or not at all (an
evaluation prepares its episodes where it plays them, see ``Store.add_prepared``); a resumed
evaluation (``start_evaluation`` with an existing name) reports what it holds through
``done_keys`` and refuses duplicates; SQLite runs in WAL mode so that several processes can
write to one file.
"""

from opsgym.store.errors import DuplicateEpisodeError, NotFoundError, StoreError
from opsgym.store.models import STATUSES
from opsgym.store.rows import EpisodeRow, Evaluation, TrainingJob, TrainingRun
from opsgym.store.store import Store, open_store

__all__ = [
    "STATUSES",
    "DuplicateEpisodeError",
    "EpisodeRow",
    "Evaluation",
    "NotFoundError",
    "Store",
    "StoreError",
    "TrainingJob",
    "TrainingRun",
    "open_store",
]
