"""Telemetry as the real tools print it, generated from the seed and the current state.

Every renderer is a pure function of public inventory, a small state summary and a fixed-size
array of uniform draws, so a call consumes the same amount of randomness whatever the truth
is. Text is produced only here, only when a tool asks for it.

Formats imitated: NCCL debug lines (``<host>:<pid>:<tid> [<dev>] NCCL INFO ...``), PyTorch's
``ProcessGroupNCCL`` watchdog lines and its ``torch.OutOfMemoryError`` message, the flight
recorder's dump (``version``, ``pg_config``, ``pg_status``, ``entries``, from a ring buffer of
``TORCH_NCCL_TRACE_BUFFER_SIZE=2000`` entries), ``NVRM: Xid`` kernel messages and nccl-tests'
``all_reduce_perf`` table.

A CUDA out-of-memory error logs no Xid: the rank's process dies with the allocator's message in
its log, its peers time out in the collective it never joined, and its memory telemetry sits at
capacity. Xid 79 is a different fault: the GPU fell off the PCIe bus; the kernel logs it, NVML
can no longer read the GPU, and the rank's process fails with a CUDA error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from opsgym.envs.fleet.domain import (
    BAD_NCCL,
    GOOD_NCCL,
    GPUS_PER_NODE,
    INCIDENTS,
    LEAF_OF_NODE,
    N_MACHINES,
    N_NODES,
    N_RANKS,
    N_SPINES,
    PCI_BUS,
    SPARE_OF_LEAF,
    bench_holds,
    bench_ratio,
    node_of,
)
from opsgym.envs.fleet.scenarios import Level

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
FALLEN_OFF = "GPU has fallen off the bus."
OP_TYPES = {
    "nccl:all_reduce": "ALLREDUCE",
    "nccl:all_gather": "ALLGATHER",
    "nccl:reduce_scatter": "REDUCE_SCATTER",
}
CACHED = 256
"""Rendered logs and dumps an episode keeps at most (the cache starts over beyond)."""
JITTER = 0.05
"""Relative standard deviation of a benchmark sample."""
BENCH_DRAWS = 3
SCRAPE_DRAWS = 3 + (N_NODES + 1) + 2 * N_RANKS + 1
BENIGN_DRAWS = 4
"""Draws per machine for the benign Xid it may have logged (whatever the level's rate)."""


@dataclass(frozen=True, slots=True)
class Inventory:
    """Public facts about the fleet, drawn from the seed: names, pids, addresses, nominals.

    Machines 0-3 run the job at the start; machines 4 and 5 are the spares of leaf 0 and 1.
    """

    job: str
    hosts: tuple[str, ...]
    ips: tuple[str, ...]
    pids: tuple[int, ...]
    tids: tuple[int, ...]
    job_start_uptime: tuple[float, ...]
    run_s: float
    nominal_busbw: float
    nominal_tps: float
    seq0: int
    comm_id: str
    incident: str

    @classmethod
    def draw(cls, rng: np.random.Generator) -> Inventory:
        """Draw an inventory: always the same number of draws."""
        u = rng.random(8 + 2 * N_RANKS + N_MACHINES).tolist()
        rack = "abcdefgh"[int(u[0] * 8)]
        row = 1 + int(u[1] * 20)
        hosts = tuple(f"hgx-{rack}{row:02d}-n{i + 1:02d}" for i in range(N_MACHINES))
        ips = tuple(f"10.{40 + row}.{i + 1}.{11 + int(u[2] * 200)}" for i in range(N_MACHINES))
        pids = tuple(20000 + int(u[8 + r] * 40000) for r in range(N_RANKS))
        tids = tuple(p + 60 + int(u[8 + N_RANKS + r] * 90) for r, p in enumerate(pids))
        uptimes = tuple(
            round(86400.0 + 200000.0 * u[8 + 2 * N_RANKS + i], 6) for i in range(N_MACHINES)
        )
        job = f"llm-pretrain-{int(u[3] * 900) + 100}"
        return cls(
            job=job,
            hosts=hosts,
            ips=ips,
            pids=pids,
            tids=tids,
            job_start_uptime=uptimes,
            run_s=round(3600.0 * (3.0 + 27.0 * u[6]), 3),
            nominal_busbw=round(350.0 + 30.0 * float(u[4]), 1),
            nominal_tps=round(180000.0 + 60000.0 * float(u[5]), 0),
            seq0=18000 + int(u[5] * 4000),
            comm_id=f"0x{int(u[3] * 2**48):012x}",
            incident=INCIDENTS[int(u[7] * len(INCIDENTS))].format(job=job),
        )

    def uptime(self, machine: int, clock: float) -> float:
        """A machine's uptime (seconds) at ``clock`` minutes into the incident."""
        return self.job_start_uptime[machine] + self.run_s + 60.0 * clock


def benign_xids(level: Level, rng: np.random.Generator) -> list[tuple[int, int, float] | None]:
    """The benign Xid each machine logged during the job, if any (with the level's red-herring
    rate): ``(kind, gpu, share of the run before it)``. Always the same number of draws.
    """
    u = rng.random(BENIGN_DRAWS * N_MACHINES).tolist()
    out: list[tuple[int, int, float] | None] = []
    for m in range(N_MACHINES):
        a, b, c, d = u[BENIGN_DRAWS * m : BENIGN_DRAWS * (m + 1)]
        logged = a < level.red_herring
        out.append((int(b * len(BENIGN_XIDS)), int(c * GPUS_PER_NODE), d) if logged else None)
    return out


def ring_order(aware: bool) -> list[int]:
    """Ranks in ring order: leaf-contiguous when ``aware``, else interleaved across leaves."""
    nodes = list(range(N_NODES)) if aware else [0, 2, 1, 3]
    return [n * GPUS_PER_NODE + g for n in nodes for g in range(GPUS_PER_NODE)]


def _prefix(hosts: Sequence[str], inv: Inventory, rank: int, main: bool = False) -> str:
    tid = inv.pids[rank] if main else inv.tids[rank]
    return f"{hosts[node_of(rank)]}:{inv.pids[rank]}:{tid} [{rank % GPUS_PER_NODE}]"


def jitter(rank: int, seq: int) -> float:
    """A fixed pseudo-random share in [0, 1) for ``(rank, seq)``: the details of a log line or
    a flight-recorder entry, which must read the same twice, drawn from no generator.
    """
    return ((seq * 2654435761 + rank * 40503) % 10007) / 10007


# -- the surface: a scrape of the dashboard ----------------------------------------------


def scrape(
    inv: Inventory, s: dict[str, Any], level: Level, u: Sequence[float]
) -> tuple[dict[str, Any], dict[str, int]]:
    """Render one telemetry update from the captured surface state ``s``.

    Returns the report and counts for the record: whether it carries a red herring, how many
    degraded parts it should show, and how many of those it masks.
    """
    status, drained, hosts = s["status"], set(s["drained"]), s["hosts"]
    oom, lost = s["oom"], s["lost"]
    degraded: dict[int, str] = {}
    for rank in lost:
        degraded.setdefault(node_of(rank), "lost")
    for rank in oom:
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
        if kind in ("oom", "lost"):
            rank = min(r for r in (oom if kind == "oom" else lost) if node_of(r) == node)
            gpu = rank % GPUS_PER_NODE
            detail = (
                f"memory {79.3 + 0.6 * float(u[0]):.1f}/80.0 GiB at its last sample"
                if kind == "oom"
                else "NVML: Unable to determine the device handle for the GPU: GPU is lost"
            )
            alerts.append(
                {
                    "severity": "critical",
                    "source": hosts[node],
                    "rank": rank,
                    "message": f"rank {rank} (GPU {gpu}): no heartbeat; {detail}",
                }
            )
        else:
            alerts.append(
                {
                    "severity": "warning",
                    "source": hosts[node],
                    "rank": None,
                    "message": "NCCL WARN Message truncated on communicators of "
                    f"{hosts[node]} ({max(1, round(8 * s['spread']))}/8 affected)",
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
                "source": hosts[node],
                "rank": node * GPUS_PER_NODE + gpu,
                "message": text,
            }
        )
    alerts.sort(key=lambda a: (a["source"], a["message"]))
    noise = u[3 + N_NODES + 1 :]
    spinning = status in ("stalled", "hung")
    slowed = status == "degraded"
    decoy = s["decoy_rank"]
    nodes = []
    for node in range(N_NODES):
        if node in drained:
            nodes.append({"host": hosts[node], "status": "drained", "gpus": []})
            continue
        visible = node not in masked  # a masked node's dead GPUs read as healthy ones
        gone, starved = (lost, oom) if visible else ((), ())
        gpus = []
        for g in range(GPUS_PER_NODE):
            rank = node * GPUS_PER_NODE + g
            a, b = float(noise[2 * rank]), float(noise[2 * rank + 1])
            if rank in gone:  # NVML cannot read a lost GPU
                mem, util, beat = None, None, 30 + int(60 * b)
            elif rank in starved:
                mem, util, beat = round(79.3 + 0.6 * a, 1), 0, 30 + int(60 * b)
            else:
                if rank == decoy:
                    mem = round(79.0 + 0.6 * a, 1)  # at its high watermark, and healthy
                else:
                    mem = round(58.0 + 14.0 * a, 1)
                if spinning:
                    util = 100  # NCCL kernels spin while a collective waits
                else:
                    util = 55 + int(25 * b) if slowed else 91 + int(8 * b)
                beat = 1 + int(3 * b)
            gpus.append(
                {"rank": rank, "gpu": g, "mem_gib": mem, "util_pct": util, "heartbeat_s": beat}
            )
        shown = "degraded" if node in degraded and visible else "ok"
        nodes.append({"host": hosts[node], "status": shown, "gpus": gpus})
    tps = 0.0 if spinning else inv.nominal_tps * s["factor"] * (1.0 + 0.1 * (float(u[-1]) - 0.5))
    report = {
        "job": {
            "name": inv.job,
            "status": status,
            "throughput_tokens_per_s": round(tps),
            "nominal_tokens_per_s": inv.nominal_tps,
            "nodes_in_job": N_NODES - len(drained),
        },
        "alerts": alerts,
        "nodes": nodes,
    }
    parts = len(degraded) + (spine is not None)
    hidden = len(masked) + bool(spine_masked)
    return report, {"red_herring": int(red_herring), "degraded": parts, "masked": hidden}


# -- deep diagnostics ----------------------------------------------------------------------


def _oom_line(rank: int) -> str:
    j, k = jitter(rank, 7), jitter(rank, 11)
    ask = 1.5 + 2.0 * j
    free = 100 + int(500 * k)
    in_use = 79.10 - free / 1024
    reserved = 0.8 + 2.0 * jitter(rank, 13)
    return (
        f"[rank{rank}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
        f"{ask:.2f} GiB. GPU {rank % GPUS_PER_NODE} has a total capacity of 79.10 GiB of which "
        f"{free}.00 MiB is free. Including non-PyTorch memory, this process has {in_use:.2f} GiB "
        f"memory in use. Of the allocated memory {in_use - reserved - 0.5:.2f} GiB is allocated "
        f"by PyTorch, and {reserved:.2f} GiB is reserved by PyTorch but unallocated. If reserved "
        "but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
        "documentation for Memory Management  "
        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
    )


def _ring_sends(node: int, aware: bool) -> tuple[tuple[int, int], ...]:
    """The ring's hops that leave ``node``: ``(rank, next rank)``."""
    order = ring_order(aware)
    hops = zip(order, order[1:] + order[:1], strict=True)
    return tuple((r, n) for r, n in hops if node_of(r) == node and node_of(n) != node)


_CHANNELS = {aware: " ".join(f"{r:>3}" for r in ring_order(aware)) for aware in (False, True)}
"""The ring's channel, as an init line prints it, by whether the ring is topology-aware."""
_SENDS = {(n, aware): _ring_sends(n, aware) for n in range(N_NODES) for aware in (False, True)}
"""The ring's hops that leave each node, by node and whether the ring is topology-aware."""
_COMMS = tuple(
    f" NCCL INFO comm 0x{0x55D0A000 + r * 4096:x} rank {r} nranks {N_RANKS} cudaDev {r % 8} "
    f"nvmlDev {r % 8} busId {PCI_BUS[r % 8]}000 commId "
    for r in range(N_RANKS)
)
"""The middle of each rank's "Init COMPLETE" line (all but its host, pid, tid and commId)."""


def _nccl_init(
    inv: Inventory, hosts: Sequence[str], node: int, machine: int, version: str, aware: bool
) -> str:
    """The lines one node's ranks log at NCCL init: they change only with the machine, the
    NCCL version it loads and the ring's order (the parts that depend on neither are built
    once, above).
    """
    aware = bool(aware)
    ranks = range(node * GPUS_PER_NODE, (node + 1) * GPUS_PER_NODE)
    host, ip, pids, tids = hosts[node], inv.ips[machine], inv.pids, inv.tids
    p = _prefix(hosts, inv, ranks[0], main=True)
    lines = [f"{p} NCCL INFO Bootstrap : Using ens12f0np0:{ip}<0>"]
    lines += [
        f"{host}:{pids[r]}:{pids[r]} [{r % 8}] NCCL INFO NCCL version {version}+cuda12.4"
        for r in ranks
    ]
    p = _prefix(hosts, inv, ranks[0])
    lines.append(
        f"{p} NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB "
        f"[3]mlx5_3:1/IB ; OOB ens12f0np0:{ip}<0>"
    )
    lines.append(f"{p} NCCL INFO Channel 00/02 : {_CHANNELS[aware]}")
    for rank, nxt in _SENDS[node, aware]:
        lines.append(
            f"{_prefix(hosts, inv, rank)} NCCL INFO Channel 00/0 : {rank}[{rank % 8}] -> "
            f"{nxt}[{nxt % 8}] [send] via NET/IB/{rank % 4}"
        )
    comm = inv.comm_id
    lines += [
        f"{host}:{pids[r]}:{tids[r]} [{r % 8}]{_COMMS[r]}{comm} - Init COMPLETE" for r in ranks
    ]
    if jitter(node, machine) < 0.5:
        rank = ranks[int(jitter(machine, node) * GPUS_PER_NODE)]
        lines.append(
            f"{_prefix(hosts, inv, rank)} NCCL INFO NVLS multicast support is not available on "
            f"dev {rank % 8}"
        )
    return "\n".join(lines)


def nccl_log(
    inv: Inventory, node: int, s: dict[str, Any], cache: dict[tuple[Any, ...], str]
) -> dict[str, Any]:
    """The log of one node's ranks (NCCL lines, watchdog timeouts, the errors a process died
    of) as text, and what a reader extracts from it. The log is a function of the state: read
    twice, it says the same. ``cache`` keeps the init lines between calls.
    """
    hosts = s["hosts"]
    machine = s["slots"][node]
    version = BAD_NCCL if node in s["version_nodes"] else GOOD_NCCL
    ranks = range(node * GPUS_PER_NODE, (node + 1) * GPUS_PER_NODE)
    affected = 0
    if s["version_nodes"] and not s["stalled_by_rank"]:
        affected = max(1, round(4 * s["spread"]))
        near = {(b + d) % N_NODES for b in s["version_nodes"] for d in (-1, 1)}
        if node not in near and affected < 3:
            affected = 0
    status = s["status"]
    stopped = status in ("stalled", "hung")
    key = (
        node,
        machine,
        version,
        s["ring_aware"],
        affected,
        stopped
        and (
            status,
            s["seq"],
            tuple(r for r in s["oom"] if r in ranks),
            tuple(r for r in s["lost"] if r in ranks),
        ),
    )
    found = cache.get(key)
    if found is None:
        if len(cache) > CACHED:
            cache.clear()
        found = cache[key] = _nccl_render(inv, node, s, ranks, version, affected, cache)
    log, summary = found
    return {"host": hosts[node], "log": log, "summary": summary}


def _nccl_render(
    inv: Inventory,
    node: int,
    s: dict[str, Any],
    ranks: range,
    version: str,
    affected: int,
    cache: dict[tuple[Any, ...], Any],
) -> tuple[str, dict[str, Any]]:
    """The log's text and its summary."""
    hosts, machine = s["hosts"], s["slots"][node]
    key = (node, machine, version, s["ring_aware"])
    log = cache.get(key)
    if log is None:
        log = cache[key] = _nccl_init(inv, hosts, node, machine, version, s["ring_aware"])
    lines = []
    warnings = 0
    for k in range(min(affected, GPUS_PER_NODE)):
        rank = ranks[(k * 3) % GPUS_PER_NODE]
        size = 1 << (17 + k % 4)
        lines.append(
            f"{_prefix(hosts, inv, rank)} NCCL WARN Message truncated : received "
            f"{2 * size} bytes instead of {size}"
        )
        warnings += 1
    watchdog: dict[str, str] = {}
    oom_errors: list[int] = []
    cuda_errors: list[int] = []
    if s["status"] in ("stalled", "hung"):
        seq = s["seq"] + 1
        for rank in ranks:
            if rank in s["oom"]:
                oom_errors.append(rank)
                lines.append(_oom_line(rank))
                continue
            if rank in s["lost"]:
                cuda_errors.append(rank)
                lines.append(f"{_prefix(hosts, inv, rank)} NCCL WARN Cuda failure 'unknown error'")
                lines.append(f"[rank{rank}]: RuntimeError: CUDA error: unknown error")
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
                f"{600000 + int(900 * jitter(rank, seq))} milliseconds before timing out."
            )
    if lines:
        log = log + "\n" + "\n".join(lines)
    summary = {
        "version": version,
        "truncation_warnings": warnings,
        "watchdog_ops": watchdog,
        "oom_errors": oom_errors,
        "cuda_errors": cuda_errors,
    }
    return log, summary


def kernel_log(inv: Inventory, node: int, s: dict[str, Any]) -> dict[str, Any]:
    """``dmesg`` of the machine serving one node, as text: Xid lines (a GPU that fell off the
    bus, a benign one the machine logged, stale decoys from before the job) and noise.
    """
    machine = s["slots"][node]
    start = s["job_start"][machine]
    events: list[tuple[float, int, int, str]] = []
    for where, gpu, clock in s["xids"]:
        if where == machine:
            events.append((inv.uptime(machine, clock), 79, gpu, FALLEN_OFF))
    if s["stale_xid"] is not None and s["stale_xid"][0] == machine:
        events.append((start * 0.4, 79, s["stale_xid"][1], FALLEN_OFF))
    benign = s["benign"][machine]
    if benign is not None:
        kind, gpu, share = benign
        xid, text = BENIGN_XIDS[kind]
        events.append((start + inv.run_s * share, xid, gpu, text))
    noise = [
        (start - 3600.0, "nvidia-peermem: loading out-of-tree module taints kernel."),
        (
            start - 1800.0,
            "EXT4-fs (nvme0n1p1): mounted filesystem with ordered data mode. Quota mode: none.",
        ),
    ]
    # a wrapped ring buffer has lost everything older than the middle of the job's run
    earliest = start + inv.run_s / 2 if s["dmesg_wrapped"] else 0.0
    lines = [f"[{t:>13.6f}] {text}" for t, text in noise if t >= earliest]
    xids = []
    current = []
    for t, xid, gpu, text in sorted(events):
        if t < earliest:
            continue
        bus = PCI_BUS[gpu]
        rank = node * GPUS_PER_NODE + gpu
        lines.append(
            f"[{t:>13.6f}] NVRM: Xid (PCI:0000:{bus}:00): {xid}, pid={inv.pids[rank]}, {text}"
        )
        if xid == 79:
            lines.append(f"[{t + 0.000004:>13.6f}] NVRM: GPU 0000:{bus}:00.0: {text}")
        xids.append({"xid": xid, "gpu": gpu, "rank": rank, "uptime_s": round(t, 6)})
        if xid == 79 and t >= start:
            current.append(rank)
    summary = {
        "job_start_uptime_s": round(start, 6),
        "earliest_uptime_s": round(earliest, 6) if earliest else None,
        "xids": xids,
        "current_xid79_ranks": sorted(set(current)),
    }
    return {"host": s["hosts"][node], "dmesg": "\n".join(lines), "summary": summary}


def benchmark(inv: Inventory, factor: float, u: Sequence[float]) -> dict[str, Any]:
    """One ``all_reduce_perf`` run over the job's ring: jittered bus bandwidth."""
    z = 2.0 * (float(u[0]) + float(u[1]) + float(u[2]) - 1.5)  # unit variance, within +-3
    busbw = round(inv.nominal_busbw * factor * (1.0 + JITTER * z), 2)
    algbw = busbw * N_RANKS / (2 * (N_RANKS - 1))
    size = 1 << 30
    time_us = size / (algbw * 1e3) if algbw else float("inf")
    table = (
        "#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)\n"
        f"  {size:>11}  {size // 2:>12}  bfloat16     sum      -1  {time_us:7.1f}  "
        f"{algbw:6.2f}  {busbw:6.2f}       0"
    )
    return {
        "busbw_gbps": busbw,
        "nominal_gbps": inv.nominal_busbw,
        "ratio": bench_ratio(busbw, inv.nominal_busbw),
        "at_target": bench_holds(busbw, inv.nominal_busbw),
        "output": table,
    }


def topology(inv: Inventory, s: dict[str, Any], u: Sequence[float]) -> dict[str, Any]:
    """Leaves, spines, spares, the ring's order and route, and each spine's uplink counters."""
    order = ring_order(s["ring_aware"])
    util, ecn = [], []
    for spine in range(N_SPINES):
        load = s["loads"][spine]
        hot = s["congested"] and spine == s["spine"] and load > 0
        base = 0.30 + 0.15 * load + 0.1 * float(u[spine])
        level = 0.88 + 0.1 * float(u[2 + spine]) if hot else min(base, 0.8)
        util.append(round(level, 3))
        ecn.append(int((40000 + 80000 * float(u[2 + spine])) if hot else 200 * float(u[spine])))
    hosts = s["hosts"]
    return {
        "leaves": {
            f"leaf-{leaf}": [hosts[n] for n in range(N_NODES) if LEAF_OF_NODE[n] == leaf]
            for leaf in range(2)
        },
        "spares": {f"leaf-{leaf}": inv.hosts[m] for leaf, m in enumerate(SPARE_OF_LEAF)},
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


def library_path(host: str, bad: bool, fixed: bool) -> dict[str, Any]:
    """What ``echo $LD_LIBRARY_PATH`` and ``ldconfig`` say about libnccl on one node."""
    version = BAD_NCCL if bad else GOOD_NCCL
    path = f"/opt/nccl-{version}/lib:/usr/local/cuda-12.4/lib64"
    if not bad and not fixed:
        path = "/usr/local/cuda-12.4/lib64:/opt/nccl-2.27.0/lib"
    return {
        "host": host,
        "LD_LIBRARY_PATH": path,
        "libnccl": f"/opt/nccl-{version}/lib/libnccl.so.{version}",
        "version": version,
        "expected": GOOD_NCCL,
    }
