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

from opsgym.envs.fleet.tasks import FR_BUFFER, GPUS_PER_NODE, N_NODES, N_RANKS, node_of
from opsgym.envs.fleet.telemetry import CACHED, OP_TYPES, Inventory, jitter

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
    inv: Inventory, rank: int, last_n: int, s: dict[str, Any], cache: dict[tuple[Any, ...], Any]
) -> dict[str, Any]:
    """A PyTorch flight-recorder dump of ``rank``'s default process group: the newest
    ``last_n`` entries of its ring buffer of ``FR_BUFFER`` collectives, as the dump file's
    JSON text (version, pg_config, pg_status, entries), and what a reader extracts from it.
    An entry is a record of a past collective, so a dump depends only on the rank's state (it
    draws no randomness) and ``cache`` (one per episode) keeps it; its summary is shared and
    must not be changed.
    """
    seq = s["seq"]
    status = s["status"]
    dead = rank in s["oom"] or rank in s["lost"]
    stuck = status in ("stalled", "hung") and not dead
    op = "nccl:all_reduce"
    if status == "hung" and rank == s["desync_rank"]:
        op = s["desync_op"]
    last = seq + 1 if stuck else seq
    straggler = rank == s["decoy_rank"]
    key = (rank, last_n, last, stuck, dead and status == "stalled", op, straggler)
    found = cache.get(key)
    if found is None:
        if len(cache) > CACHED:
            cache.clear()
        found = cache[key] = _dump(rank, last_n, last, stuck, dead, status, op, straggler)
    dump, summary = found
    return {"rank": rank, "host": s["hosts"][node_of(rank)], "dump": dump, "summary": summary}


def _dump(
    rank: int, last_n: int, last: int, stuck: bool, dead: bool, status: str, op: str, slow: bool
) -> tuple[str, dict[str, Any]]:
    """The dump's text and its summary."""
    held = min(FR_BUFFER, last)
    first = max(last - min(last_n, held) + 1, 1)
    straggler = slow
    entries = []
    for cseq in range(first, last + 1):
        running = stuck and cseq == last
        j = jitter(rank, cseq)
        created = T0_NS + cseq * 1_500_000_000 + int(j * 1e6)
        if running:
            duration, done = "null", "null"
        else:
            slow = straggler and cseq == last - 1
            duration = f"{180.0 + 90.0 * j:.3f}" if slow else f"{3.0 + 9.0 * j:.3f}"
            done = created + 5_000_000
        name = op if cseq == last else "nccl:all_reduce"
        entries.append(
            f'{{"record_id": {cseq - 1}, "pg_id": 0, "process_group": ["0", "default_pg"], '
            f'"collective_seq_id": {cseq}, "p2p_seq_id": 0, "op_id": {cseq}, "profiling_name": '
            f'"{name}", "time_created_ns": {created}, "duration_ms": {duration}, '
            f'"time_discovered_started_ns": {created + 1000}, "time_discovered_completed_ns": '
            f"{done}, {_TAILS[name, running]}"
        )
    completed = last - 1 if stuck else last
    node = node_of(rank)
    dump = (
        f'{_CONFIGS[node]}"pg_status": {{"0": {{"last_enqueued_collective": {last}, '
        f'"last_started_collective": {last}, "last_completed_collective": {completed}}}}}, '
        f'"entries": [{", ".join(entries)}], "warnings": [{_FULL if last > FR_BUFFER else ""}]}}'
    )
    summary = {
        "seq": last,
        "op": op,
        "state": "started" if stuck else "completed",
        "enqueued": last,
        "completed": completed,
        "behind": dead and status == "stalled",
        "buffered": held,
        "returned": len(entries),
    }
    return dump, summary
