"""Telemetry as the real tools print it, generated from the seed and the current state.

Every renderer is a pure function of public inventory, a small state summary and a fixed-size
array of uniform draws, so a call consumes the same amount of randomness whatever the truth
is. Text is produced only here, only when a tool asks for it.

Formats imitated: NCCL debug lines (``<host>:<pid>:<tid> [<dev>] NCCL INFO ...``), PyTorch's
``ProcessGroupNCCL`` watchdog lines, the flight recorder's dump (``version``, ``pg_config``,
``pg_status``, ``entries``), ``NVRM: Xid`` kernel messages, and nccl-tests' ``all_reduce_perf``
table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from opsgym.envs.fleet.tasks import (
    BAD_NCCL,
    GOOD_NCCL,
    GPUS_PER_NODE,
    LEAF_OF_NODE,
    N_NODES,
    N_RANKS,
    N_SPINES,
    PCI_BUS,
    Level,
    node_of,
)

MEM_TOTAL_GIB = 80.0
RH_KINDS = (
    "GPU {g} temperature {t}C, clocks throttled (HW slowdown)",
    "GPU {g} ECC single-bit errors: {n} in the last hour",
    "GPU {g} row remapping pending (reboot to activate)",
    "NIC mlx5_{g} link flapped once, up again after {n} s",
    "GPU {g} memory {m}/80.0 GiB (high watermark)",
)
BENIGN_XIDS = (
    (13, "Graphics SM Warp Exception on (GPC 1, TPC 2, SM 0): Out Of Range Address"),
    (
        31,
        "Ch 0000000c, intr 10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_3 faulted @ "
        "0x7f3a_9c000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ",
    ),
    (63, "Row Remapper: New row marked for remapping, reboot GPU to activate."),
    (94, "Contained: CE User Channel (0x9). RST: No, D-RST: No"),
)
OP_TYPES = {
    "nccl:all_reduce": "ALLREDUCE",
    "nccl:all_gather": "ALLGATHER",
    "nccl:reduce_scatter": "REDUCE_SCATTER",
}
JITTER = 0.05
"""Relative standard deviation of a benchmark sample."""
BENCH_DRAWS = 3
SCRAPE_DRAWS = 3 + (N_NODES + 1) + 2 * N_RANKS + 1
LOG_DRAWS = 4
FR_DRAWS = 6
KERNEL_DRAWS = 4


@dataclass(frozen=True, slots=True)
class Inventory:
    """Public facts about the fleet, drawn from the seed: names, pids, addresses, nominals."""

    job: str
    hosts: tuple[str, ...]
    ips: tuple[str, ...]
    pids: tuple[int, ...]
    tids: tuple[int, ...]
    job_start_uptime: tuple[float, ...]
    nominal_busbw: float
    nominal_tps: float
    seq0: int
    comm_id: str

    @classmethod
    def draw(cls, rng: np.random.Generator) -> Inventory:
        """Draw an inventory: always the same number of draws."""
        u = rng.random(6 + 2 * N_RANKS + N_NODES).tolist()
        rack = "abcdefgh"[int(u[0] * 8)]
        row = 1 + int(u[1] * 20)
        hosts = tuple(f"hgx-{rack}{row:02d}-n{i + 1:02d}" for i in range(N_NODES))
        ips = tuple(f"10.{40 + row}.{i + 1}.{11 + int(u[2] * 200)}" for i in range(N_NODES))
        pids = tuple(20000 + int(u[6 + r] * 40000) for r in range(N_RANKS))
        tids = tuple(p + 60 + int(u[6 + N_RANKS + r] * 90) for r, p in enumerate(pids))
        uptimes = tuple(
            round(86400.0 + 200000.0 * u[6 + 2 * N_RANKS + i], 6) for i in range(N_NODES)
        )
        return cls(
            job=f"llm-pretrain-{int(u[3] * 900) + 100}",
            hosts=hosts,
            ips=ips,
            pids=pids,
            tids=tids,
            job_start_uptime=uptimes,
            nominal_busbw=round(350.0 + 30.0 * float(u[4]), 1),
            nominal_tps=round(180000.0 + 60000.0 * float(u[5]), 0),
            seq0=18000 + int(u[5] * 4000),
            comm_id=f"0x{int(u[3] * 2**48):012x}",
        )


_ALL_RANKS = str(list(range(N_RANKS)))


def ring_order(aware: bool) -> list[int]:
    """Ranks in ring order: leaf-contiguous when ``aware``, else interleaved across leaves."""
    nodes = list(range(N_NODES)) if aware else [0, 2, 1, 3]
    return [n * GPUS_PER_NODE + g for n in nodes for g in range(GPUS_PER_NODE)]


def _prefix(inv: Inventory, rank: int, main: bool = False) -> str:
    tid = inv.pids[rank] if main else inv.tids[rank]
    return f"{inv.hosts[node_of(rank)]}:{inv.pids[rank]}:{tid} [{rank % GPUS_PER_NODE}]"


# -- the surface: a scrape of the dashboard ----------------------------------------------


def scrape(
    inv: Inventory, s: dict[str, Any], level: Level, u: Sequence[float]
) -> tuple[dict[str, Any], dict[str, int]]:
    """Render one telemetry update from the captured surface state ``s``.

    Returns the report and counts for the record: whether it carries a red herring, how many
    degraded parts it should show, and how many of those it masks.
    """
    status, drained = s["status"], set(s["drained"])
    degraded: dict[int, str] = {}
    for rank in s["oom"]:
        degraded.setdefault(node_of(rank), "oom")
    for node in s["version_nodes"]:
        degraded.setdefault(node, "version")
    spine = s["hot_spine"]
    masked = {n for n in degraded if u[3 + n] < level.mask}
    spine_masked = spine is not None and u[3 + N_NODES] < level.mask
    alerts: list[dict[str, Any]] = []
    for node, kind in sorted(degraded.items()):
        if node in masked:
            continue
        if kind == "oom":
            rank = min(r for r in s["oom"] if node_of(r) == node)
            alerts.append(
                {
                    "severity": "critical",
                    "source": inv.hosts[node],
                    "rank": rank,
                    "message": f"rank {rank} (GPU {rank % GPUS_PER_NODE}): no heartbeat, "
                    f"memory {79.3 + 0.6 * float(u[0]):.1f}/80.0 GiB",
                }
            )
        else:
            alerts.append(
                {
                    "severity": "warning",
                    "source": inv.hosts[node],
                    "rank": None,
                    "message": "NCCL WARN Message truncated on communicators of "
                    f"{inv.hosts[node]} ({max(1, round(8 * s['spread']))}/8 affected)",
                }
            )
    if spine is not None and not spine_masked:
        alerts.append(
            {
                "severity": "warning",
                "source": f"spine-{spine}",
                "rank": None,
                "message": f"spine-{spine} uplinks at {94 + int(5 * u[1])}% utilisation, "
                "ECN marks rising",
            }
        )
    red_herring = bool(u[0] < level.red_herring)
    if red_herring:
        healthy = [n for n in range(N_NODES) if n not in degraded and n not in drained]
        pool = healthy or [n for n in range(N_NODES) if n not in drained] or [0]
        node = pool[int(u[1] * len(pool)) % len(pool)]
        gpu = int(u[2] * GPUS_PER_NODE)
        text = RH_KINDS[int(u[2] * 40) % len(RH_KINDS)].format(
            g=gpu, t=84 + int(u[1] * 6), n=2 + int(u[1] * 9), m=f"{76.5 + 2.0 * float(u[1]):.1f}"
        )
        alerts.append(
            {
                "severity": "warning",
                "source": inv.hosts[node],
                "rank": node * GPUS_PER_NODE + gpu,
                "message": text,
            }
        )
    alerts.sort(key=lambda a: (a["source"], a["message"]))
    noise = u[3 + N_NODES + 1 :]
    spinning = status in ("stalled", "hung")
    nodes = []
    for node in range(N_NODES):
        if node in drained:
            nodes.append({"host": inv.hosts[node], "status": "drained", "gpus": []})
            continue
        gpus = []
        for g in range(GPUS_PER_NODE):
            rank = node * GPUS_PER_NODE + g
            a, b = float(noise[2 * rank]), float(noise[2 * rank + 1])
            mem, beat = 58.0 + 14.0 * a, 1 + int(3 * b)
            util = 55 + int(25 * b) if status == "degraded" else 91 + int(8 * b)
            if spinning:
                util = 100  # NCCL kernels spin while a collective waits
            if rank in s["oom"] and node not in masked:
                mem, util, beat = 79.3 + 0.6 * a, 0, 30 + int(60 * b)
            elif rank == s["decoy_rank"]:
                mem = 79.0 + 0.6 * a
            gpus.append(
                {
                    "rank": rank,
                    "gpu": g,
                    "mem_gib": round(mem, 1),
                    "util_pct": util,
                    "heartbeat_s": beat,
                }
            )
        shown = "degraded" if node in degraded and node not in masked else "ok"
        nodes.append({"host": inv.hosts[node], "status": shown, "gpus": gpus})
    tps = 0.0 if spinning else inv.nominal_tps * s["factor"] * (1.0 + 0.1 * (float(u[-1]) - 0.5))
    report = {
        "job": {
            "name": inv.job,
            "status": status,
            "throughput_tokens_per_s": round(tps),
            "nominal_tokens_per_s": inv.nominal_tps,
        },
        "alerts": alerts,
        "nodes": nodes,
    }
    parts = len(degraded) + (spine is not None)
    hidden = len(masked) + bool(spine_masked)
    return report, {"red_herring": int(red_herring), "degraded": parts, "masked": hidden}


# -- deep diagnostics ----------------------------------------------------------------------


def nccl_log(inv: Inventory, node: int, s: dict[str, Any], u: Sequence[float]) -> dict[str, Any]:
    """The NCCL and ProcessGroupNCCL lines of one node's ranks, and what a reader extracts."""
    version = BAD_NCCL if node in s["version_nodes"] else GOOD_NCCL
    order = ring_order(s["ring_aware"])
    ranks = range(node * GPUS_PER_NODE, (node + 1) * GPUS_PER_NODE)
    lines = []
    for rank in ranks:
        p = _prefix(inv, rank, main=True)
        lines.append(f"{p} NCCL INFO Bootstrap : Using ens12f0np0:{inv.ips[node]}<0>")
        lines.append(f"{p} NCCL INFO NCCL version {version}+cuda12.4")
    first = ranks[0]
    p = _prefix(inv, first)
    lines.append(
        f"{p} NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB "
        f"[3]mlx5_3:1/IB ; OOB ens12f0np0:{inv.ips[node]}<0>"
    )
    lines.append(f"{p} NCCL INFO Channel 00/02 : " + " ".join(f"{r:>3}" for r in order))
    for i, rank in enumerate(order):
        nxt = order[(i + 1) % N_RANKS]
        if node_of(rank) == node and node_of(nxt) != node:
            lines.append(
                f"{_prefix(inv, rank)} NCCL INFO Channel 00/0 : {rank}[{rank % 8}] -> "
                f"{nxt}[{nxt % 8}] [send] via NET/IB/{rank % 4}"
            )
    for rank in ranks:
        lines.append(
            f"{_prefix(inv, rank)} NCCL INFO comm 0x{0x55D0A000 + rank * 4096:x} rank {rank} "
            f"nranks {N_RANKS} cudaDev {rank % 8} nvmlDev {rank % 8} busId {PCI_BUS[rank % 8]}000"
            f" commId {inv.comm_id} - Init COMPLETE"
        )
    warnings = 0
    if s["version_nodes"] and not s["stalled_by_oom"]:
        affected = max(1, round(4 * s["spread"]))
        near = {(b + d) % N_NODES for b in s["version_nodes"] for d in (-1, 1)}
        if node in near or affected >= 3:
            for k in range(min(affected, GPUS_PER_NODE)):
                rank = ranks[(k * 3) % GPUS_PER_NODE]
                size = 1 << (17 + k % 4)
                lines.append(
                    f"{_prefix(inv, rank)} NCCL WARN Message truncated : received {2 * size} "
                    f"bytes instead of {size}"
                )
                warnings += 1
    if u[0] < 0.5:
        rank = ranks[int(u[1] * GPUS_PER_NODE)]
        lines.append(
            f"{_prefix(inv, rank)} NCCL INFO NVLS multicast support is not available on "
            f"dev {rank % 8}"
        )
    watchdog: dict[str, str] = {}
    errors: list[int] = []
    if s["status"] in ("stalled", "hung"):
        seq = s["seq"] + 1
        for rank in ranks:
            if rank in s["oom"]:
                errors.append(rank)
                lines.append(
                    f"[rank{rank}]: torch.OutOfMemoryError: CUDA out of memory. Tried to "
                    f"allocate {1.5 + float(u[2]):.2f} GiB. GPU {rank % 8} has a total capacity "
                    f"of 79.10 GiB of which {100 + int(300 * u[3])}.00 MiB is free."
                )
                continue
            op = s["desync_op"] if rank == s["desync_rank"] and s["status"] == "hung" else None
            kind = OP_TYPES[op or "nccl:all_reduce"]
            numel = 1048576 if op is None else 262144
            watchdog[str(rank)] = kind
            lines.append(
                f"[rank{rank}]:[E1112 {10 + node}:{22 + rank % 30:02d}:31.{inv.tids[rank]:06d} "
                f"{inv.pids[rank]} ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught "
                f"collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={kind}, "
                f"NumelIn={numel}, NumelOut={numel}, Timeout(ms)=600000) ran for "
                f"{600000 + int(900 * u[2])} milliseconds before timing out."
            )
    summary = {
        "version": version,
        "truncation_warnings": warnings,
        "watchdog_ops": watchdog,
        "oom_errors": errors,
    }
    return {"host": inv.hosts[node], "lines": lines, "summary": summary}


def kernel_log(inv: Inventory, node: int, s: dict[str, Any], u: Sequence[float]) -> dict[str, Any]:
    """``dmesg`` of one node: XID lines (real, benign red herrings, stale decoys) and noise."""
    start = inv.job_start_uptime[node]
    events: list[tuple[float, int, int, str]] = []
    for rank, since in s["xid79"]:
        if node_of(rank) == node:
            events.append((start + 60.0 * since + 0.5, 79, rank, "GPU has fallen off the bus."))
    if s["stale_xid"] is not None and s["stale_xid"][0] == node:
        gpu = s["stale_xid"][1]
        events.append((start * 0.4, 79, node * GPUS_PER_NODE + gpu, "GPU has fallen off the bus."))
    if u[0] < s["red_herring"]:
        xid, text = BENIGN_XIDS[int(u[1] * len(BENIGN_XIDS))]
        gpu = int(u[2] * GPUS_PER_NODE)
        events.append((start + 60.0 * s["clock"] * float(u[3]), xid, node * 8 + gpu, text))
    lines = [
        (start - 3600.0, "nvidia-peermem: loading out-of-tree module taints kernel."),
        (
            start - 1800.0,
            "EXT4-fs (nvme0n1p1): mounted filesystem with ordered data mode. Quota mode: none.",
        ),
    ]
    earliest = start + 30.0 if s["dmesg_wrapped"] else 0.0  # the ring buffer lost the start
    lines = [f"[{t:>13.6f}] {text}" for t, text in lines if t >= earliest]
    xids = []
    current = []
    for t, xid, rank, text in sorted(events):
        if t < earliest:
            continue
        bus = PCI_BUS[rank % GPUS_PER_NODE]
        lines.append(
            f"[{t:>13.6f}] NVRM: Xid (PCI:0000:{bus}:00): {xid}, pid={inv.pids[rank]}, "
            f"name=python3, {text}"
        )
        xids.append({"xid": xid, "gpu": rank % 8, "rank": rank, "uptime_s": round(t, 6)})
        restarted = s["restarted_at"].get(rank)
        if xid == 79 and t >= start and (restarted is None or t > start + 60.0 * restarted):
            current.append(rank)
    summary = {
        "job_start_uptime_s": start,
        "earliest_uptime_s": earliest or None,
        "xids": xids,
        "current_xid79_ranks": sorted(set(current)),
    }
    return {"host": inv.hosts[node], "lines": lines, "summary": summary}


def flight_recorder(
    inv: Inventory, rank: int, s: dict[str, Any], u: Sequence[float]
) -> dict[str, Any]:
    """A PyTorch flight-recorder dump of ``rank``'s default process group."""
    seq = s["seq"]
    status = s["status"]
    behind = rank in s["oom"]
    stuck = status in ("stalled", "hung") and not behind
    op = "nccl:all_reduce"
    if status == "hung" and rank == s["desync_rank"]:
        op = s["desync_op"]
    last = seq + 1 if stuck else seq
    entries = []
    base_ns = 1731400000000000000 + int(s["clock"] * 60e9)
    for i, cseq in enumerate(range(last - 4, last + 1)):
        running = cseq == last and stuck
        name = op if cseq == last else "nccl:all_reduce"
        numel = 262144 if name != "nccl:all_reduce" else 1048576
        created = base_ns - (last - cseq) * 850_000_000 - int(u[i] * 1e6)
        entries.append(
            {
                "record_id": cseq - s["seq0"],
                "pg_id": 0,
                "process_group": ["0", "default_pg"],
                "collective_seq_id": cseq,
                "p2p_seq_id": 0,
                "op_id": cseq,
                "profiling_name": name,
                "time_created_ns": created,
                "duration_ms": None if running else round(3.0 + 9.0 * float(u[i]), 3),
                "input_sizes": [[numel]],
                "input_dtypes": ["BFloat16"],
                "output_sizes": [[numel * (N_RANKS if name == "nccl:all_gather" else 1)]],
                "output_dtypes": ["BFloat16"],
                "state": "started" if running else "completed",
                "time_discovered_started_ns": created + 1000,
                "time_discovered_completed_ns": None if running else created + 5_000_000,
                "retired": not running,
                "timeout_ms": 600000,
                "is_p2p": False,
                "frames": [
                    {
                        "name": "all_reduce" if name == "nccl:all_reduce" else name[5:],
                        "filename": "torch/distributed/distributed_c10d.py",
                        "line": 2501,
                    },
                    {"name": "train_step", "filename": "train/loop.py", "line": 188},
                ],
            }
        )
    completed = last - 1 if stuck else last
    node = node_of(rank)
    payload = {
        "version": "2.5",
        "pg_config": {
            "0": {"name": "0", "desc": "default_pg", "ranks": _ALL_RANKS},
            "1": {
                "name": "1",
                "desc": "intra_node",
                "ranks": str(list(range(node * GPUS_PER_NODE, (node + 1) * GPUS_PER_NODE))),
            },
        },
        "pg_status": {
            "0": {
                "last_enqueued_collective": last,
                "last_started_collective": last,
                "last_completed_collective": completed,
            }
        },
        "entries": entries,
        "warnings": [
            "trace buffer (TORCH_NCCL_TRACE_BUFFER_SIZE=2000) is full; oldest entries dropped"
        ]
        if u[5] < 0.6
        else [],
    }
    summary = {
        "seq": last,
        "op": op,
        "state": entries[-1]["state"],
        "enqueued": last,
        "completed": completed,
        "behind": behind and status == "stalled",
    }
    if rank == s["decoy_rank"]:  # a straggler: slow, but it joined every collective
        entries[-2]["duration_ms"] = round(180.0 + 90.0 * float(u[4]), 3)
    return {"rank": rank, "host": inv.hosts[node], "dump": payload, "summary": summary}


def benchmark(inv: Inventory, factor: float, u: Sequence[float]) -> dict[str, Any]:
    """One ``all_reduce_perf`` run over the job's ring: jittered bus bandwidth."""
    z = 2.0 * (float(u[0]) + float(u[1]) + float(u[2]) - 1.5)  # unit variance, within +-3
    busbw = inv.nominal_busbw * factor * (1.0 + JITTER * z)
    algbw = busbw * N_RANKS / (2 * (N_RANKS - 1))
    size = 1 << 30
    time_us = size / (algbw * 1e3)
    lines = [
        "#       size         count      type   redop    root     time   algbw   busbw #wrong",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)",
        f"  {size:>11}  {size // 2:>12}  bfloat16     sum      -1  {time_us:7.1f}  "
        f"{algbw:6.2f}  {busbw:6.2f}       0",
    ]
    return {
        "busbw_gbps": round(busbw, 2),
        "nominal_gbps": inv.nominal_busbw,
        "lines": lines,
    }


def topology(inv: Inventory, s: dict[str, Any], u: Sequence[float]) -> dict[str, Any]:
    """Leaves, spines, the ring's order and route, and each spine's uplink counters."""
    order = ring_order(s["ring_aware"])
    util, ecn = [], []
    for spine in range(N_SPINES):
        load = s["loads"][spine]
        hot = s["congested"] and spine == s["spine"] and load > 0
        base = 0.30 + 0.15 * load + 0.1 * float(u[spine])
        level = 0.88 + 0.1 * float(u[2 + spine]) if hot else min(base, 0.8)
        util.append(round(level, 3))
        ecn.append(int((40000 + 80000 * float(u[2 + spine])) if hot else 200 * float(u[spine])))
    return {
        "leaves": {
            f"leaf-{leaf}": [inv.hosts[n] for n in range(N_NODES) if LEAF_OF_NODE[n] == leaf]
            for leaf in range(2)
        },
        "spines": [
            {"spine": s_, "uplink_utilisation": util[s_], "ecn_marked_packets_per_s": ecn[s_]}
            for s_ in range(N_SPINES)
        ],
        "ring": {
            "order": order,
            "leaf_crossings": 2 if s["ring_aware"] else 4,
            "route": "ecmp" if s["ring_spine"] is None else f"pinned to spine-{s['ring_spine']}",
        },
    }


def library_path(inv: Inventory, node: int, bad: bool, fixed: bool) -> dict[str, Any]:
    """What ``echo $LD_LIBRARY_PATH`` and ``ldconfig`` say about libnccl on one node."""
    version = BAD_NCCL if bad else GOOD_NCCL
    path = f"/opt/nccl-{version}/lib:/usr/local/cuda-12.4/lib64"
    if not bad and not fixed:
        path = "/usr/local/cuda-12.4/lib64:/opt/nccl-2.27.0/lib"
    return {
        "host": inv.hosts[node],
        "LD_LIBRARY_PATH": path,
        "libnccl": f"/opt/nccl-{version}/lib/libnccl.so.{version}",
        "version": version,
        "expected": GOOD_NCCL,
    }
