"""The PyTorch flight recorder of each rank, as ``torch.distributed`` dumps it.

Each rank's process group keeps a ring buffer of its last ``FR_BUFFER`` (2,000) collectives
(``TORCH_NCCL_TRACE_BUFFER_SIZE=2000``); a dump is its JSON: ``version``, ``pg_config``,
``pg_status`` (the last enqueued, started and completed collective) and the ``entries``, each
with its op, sizes, dtypes, state and frames. The tool returns the newest entries, as many as
asked. A rank that died (out of memory, or on a GPU off the bus) never enqueued the collective
its peers wait in: its dump is one behind theirs. A rank that compiled a different collective
waits in that one.
"""

from __future__ import annotations

from typing import Any

from opsgym.envs.fleet.domain import FR_BUFFER, GPUS_PER_NODE, N_NODES, N_RANKS
from opsgym.envs.fleet.telemetry import CACHED, OP_TYPES, jitter

_ALL_RANKS = str(list(range(N_RANKS)))


def _tail(name: str, running: bool) -> str:
    """The fixed end of a flight-recorder entry of ``name``: sizes, dtypes, state, frames."""
    numel = 262144 if name != "nccl:all_reduce" else 1048576
    out = numel * (N_RANKS if name == "nccl:all_gather" else 1)
    frame = "all_reduce" if name == "nccl:all_reduce" else name[5:]
    state = "started" if running else "completed"
    return (
        f'"input_sizes": [[{numel}]], "input_dtypes": ["BFloat16"], "output_sizes": [[{out}]], '
        f'"output_dtypes": ["BFloat16"], "state": "{state}", "retired": '
        f'{str(not running).lower()}, "timeout_ms": 600000, "is_p2p": false, "frames": [{{"name": '
        f'"{frame}", "filename": "torch/distributed/distributed_c10d.py", "line": 2501}}, '
        '{"name": "train_step", "filename": "train/loop.py", "line": 188}]}'
    )


_TAILS = {(name, running): _tail(name, running) for name in OP_TYPES for running in (0, 1)}
_CONFIGS = {
    node: (
        '{"version": "2.5", "pg_config": {"0": {"name": "0", "desc": "default_pg", '
        f'"ranks": "{_ALL_RANKS}"}}, "1": {{"name": "1", "desc": "intra_node", "ranks": '
        f'"{list(range(node * GPUS_PER_NODE, (node + 1) * GPUS_PER_NODE))}"}}}}, '
    )
    for node in range(N_NODES)
}
_FULL = f'"trace buffer (TORCH_NCCL_TRACE_BUFFER_SIZE={FR_BUFFER}) is full; oldest entries dropped"'
T0_NS = 1731400000000000000
"""When the collective numbered 0 was created; the job makes one every 1.5 s while it runs."""


def flight_recorder(
    rank: int,
    last_n: int,
    seq: int,
    status: str,
    dead: bool,
    op: str,
    straggler: bool,
    host: str,
    cache: dict[tuple[Any, ...], Any],
) -> dict[str, Any]:
    """A PyTorch flight-recorder dump of ``rank``'s default process group (on ``host``): the
    newest ``last_n`` entries of its ring buffer of ``FR_BUFFER`` collectives, as the dump
    file's JSON text (version, pg_config, pg_status, entries), and what a reader extracts from
    it. The job is at collective ``seq`` with ``status``; the rank is ``dead`` (out of memory,
    or on a lost GPU), waits in ``op``, and is the harsh task's ``straggler`` or not.
    An entry is a record of a past collective, so a dump depends only on the rank's state (it
    draws no randomness) and ``cache`` (one per episode) keeps it; its summary is shared and
    must not be changed.
    """
    stuck = (status == "stalled" or status == "hung") and not dead
    last = seq + 1 if stuck else seq
    behind = dead and status == "stalled"
    key = (rank, last_n, last, stuck, behind, op, straggler)
    found = cache.get(key)
    if found is None:
        if len(cache) > CACHED:
            cache.clear()
        found = cache[key] = _dump(rank, last_n, last, stuck, behind, op, straggler)
    return {"rank": rank, "host": host, "dump": found[0], "summary": found[1]}


def _dump(
    rank: int, last_n: int, last: int, stuck: bool, behind: bool, op: str, straggler: bool
) -> tuple[str, dict[str, Any]]:
    """The dump's text and its summary."""
    # conditionals rather than min() and max(): this runs on most reads (the job moves on)
    held = FR_BUFFER if last > FR_BUFFER else last
    first = last - (last_n if last_n < held else held) + 1
    if first < 1:
        first = 1
    entries = []
    for cseq in range(first, last + 1):
        running = stuck and cseq == last
        j = jitter(rank, cseq)
        created = T0_NS + cseq * 1_500_000_000 + int(j * 1e6)
        if running:
            duration = done = "null"
        elif straggler and cseq == last - 1:
            duration, done = f"{180.0 + 90.0 * j:.3f}", created + 5_000_000
        else:
            duration, done = f"{3.0 + 9.0 * j:.3f}", created + 5_000_000
        name = op if cseq == last else "nccl:all_reduce"
        seq = str(cseq)
        entries.append(
            f'{{"record_id": {cseq - 1}, "pg_id": 0, "process_group": ["0", "default_pg"], '
            f'"collective_seq_id": {seq}, "p2p_seq_id": 0, "op_id": {seq}, "profiling_name": '
            f'"{name}", "time_created_ns": {created}, "duration_ms": {duration}, '
            f'"time_discovered_started_ns": {created + 1000}, "time_discovered_completed_ns": '
            f"{done}, {_TAILS[name, running]}"
        )
    completed = last - 1 if stuck else last
    enqueued = str(last)
    dump = (
        f'{_CONFIGS[rank // GPUS_PER_NODE]}"pg_status": {{"0": {{"last_enqueued_collective": '
        f'{enqueued}, "last_started_collective": {enqueued}, "last_completed_collective": '
        f"{completed}}}}}, "
        f'"entries": [{", ".join(entries)}], "warnings": [{_FULL if last > FR_BUFFER else ""}]}}'
    )
    summary = {
        "seq": last,
        "op": op,
        "state": "started" if stuck else "completed",
        "enqueued": last,
        "completed": completed,
        "behind": behind,
        "buffered": held,
        "returned": len(entries),
    }
    return dump, summary
