"""The fleet's telemetry: log lines parse with the formats they imitate (an out-of-memory death
logs no Xid; a GPU off the bus logs Xid 79), and red herrings and masking follow the
curriculum level's rates within sampling error."""

from __future__ import annotations

import json
import math
import re

import pytest

import opsgym
from opsgym.envs.fleet.scenarios import LEVELS

NCCL_LINE = re.compile(
    r"^(?P<host>[\w.-]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>[0-7])\] "
    r"NCCL (?P<level>INFO|WARN) (?P<msg>.+)$"
)
WATCHDOG_LINE = re.compile(
    r"^\[rank(?P<rank>\d+)\]:\[E\d{4} \d{2}:\d{2}:\d{2}\.\d{6} (?P<pid>\d+) "
    r"ProcessGroupNCCL\.cpp:\d+\] \[Rank (?P=rank)\] Watchdog caught collective operation "
    r"timeout: WorkNCCL\(SeqNum=\d+, OpType=(?P<op>[A-Z_]+), NumelIn=\d+, NumelOut=\d+, "
    r"Timeout\(ms\)=\d+\) ran for \d+ milliseconds before timing out\.$"
)
OOM_LINE = re.compile(
    r"^\[rank\d+\]: torch\.OutOfMemoryError: CUDA out of memory\. Tried to allocate "
    r"[\d.]+ GiB\. GPU [0-7] has a total capacity of 79\.\d\d GiB of which [\d.]+ MiB is free\. "
    r"Including non-PyTorch memory, this process has [\d.]+ GiB memory in use\. .+$"
)
CUDA_LINE = re.compile(r"^\[rank\d+\]: RuntimeError: CUDA error: unknown error$")
KERNEL_LINE = re.compile(r"^\[\s*\d+\.\d{6}\] (?P<msg>.+)$")
XID_LINE = re.compile(
    r"^NVRM: Xid \(PCI:0000:(?P<bus>[0-9a-f]{2}):00\): (?P<xid>\d+), pid=\d+, .+$"
)
FR_ENTRY_KEYS = {
    "record_id",
    "pg_id",
    "process_group",
    "collective_seq_id",
    "p2p_seq_id",
    "op_id",
    "profiling_name",
    "time_created_ns",
    "duration_ms",
    "input_sizes",
    "input_dtypes",
    "output_sizes",
    "output_dtypes",
    "state",
    "time_discovered_started_ns",
    "time_discovered_completed_ns",
    "retired",
    "timeout_ms",
    "is_p2p",
    "frames",
}


def test_nccl_log_lines_parse_with_the_real_prefix_format():
    seen = set()
    for scenario in ("easy", "hard", "fleet_coordination", "gpu_lost"):
        for seed in range(4):
            ep = opsgym.make("fleet", scenario, seed)
            hosts, pids = ep.observe()["hosts"], ep.world.inv.pids
            for node in range(4):
                report = ep.step("query_nccl_logs", {"node": node}).report
                kinds = set()
                for line in report["log"].splitlines():
                    m = NCCL_LINE.match(line)
                    if m:
                        assert m["host"] == hosts[node]
                        assert int(m["pid"]) in pids[node * 8 : node * 8 + 8]
                        kinds.add(m["level"])
                        continue
                    w = WATCHDOG_LINE.match(line)
                    if w:
                        assert int(w["pid"]) == pids[int(w["rank"])]
                        continue
                    kind = (
                        "oom" if OOM_LINE.match(line) else "cuda" if CUDA_LINE.match(line) else None
                    )
                    assert kind, line
                    seen.add(kind)
                assert "INFO" in kinds
                versions = [v for v in report["log"].splitlines() if "NCCL INFO NCCL version" in v]
                assert len(versions) == 8
                assert all(re.search(r"NCCL version 2\.\d+\.\d+\+cuda12\.4$", v) for v in versions)
    assert seen == {"oom", "cuda"}


def test_an_out_of_memory_death_logs_no_xid_and_a_gpu_off_the_bus_logs_xid_79():
    oom = opsgym.make("fleet", "easy", 6, overrides={"oom_present": True, "oom_rank": 21})
    log = oom.step("query_nccl_logs", {"node": 2}).report
    assert 21 in log["summary"]["oom_errors"] and "torch.OutOfMemoryError" in log["log"]
    assert "Watchdog caught collective operation timeout" in log["log"]  # its peers hang
    kernel = oom.step("read_kernel_log", {"node": 2}).report
    assert not [x for x in kernel["summary"]["xids"] if x["xid"] == 79]
    assert _unmasked_hot(oom, 21)["mem_gib"] >= 79.0  # at capacity at its last sample
    lost = opsgym.make(
        "fleet", "gpu_lost", 6, overrides={"gpu_lost_present": True, "lost_rank": 21}
    )
    kernel = lost.step("read_kernel_log", {"node": 2}).report
    assert kernel["summary"]["current_xid79_ranks"] == [21]
    line = next(v for v in kernel["dmesg"].splitlines() if "): 79, " in v)
    assert re.search(
        r"NVRM: Xid \(PCI:0000:ab:00\): 79, pid=\d+, GPU has fallen off the bus\.$", line
    )
    log = lost.step("query_nccl_logs", {"node": 2}).report
    assert log["summary"]["cuda_errors"] == [21] and not log["summary"]["oom_errors"]
    assert _unmasked_hot(lost, 21)["mem_gib"] is None  # NVML can no longer read it


def _unmasked_hot(ep: opsgym.Episode, rank: int) -> dict:
    """The dashboard's entry for ``rank`` in the first scrape that does not mask its node."""
    while True:
        report = ep.step("check_telemetry").report
        if report["nodes"][rank // 8]["status"] == "degraded":
            hot = {g["rank"]: g for g in report["hot_gpus"]}
            assert hot[rank]["heartbeat_s"] >= 30  # silent
            return hot[rank]


def test_watchdog_lines_name_the_rank_that_issued_a_different_collective():
    ep = opsgym.make("fleet", "hard", 3, overrides={"desync_present": True, "desync_rank": 27})
    lines = ep.step("query_nccl_logs", {"node": 3}).report["log"].splitlines()
    ops = {int(m["rank"]): m["op"] for m in map(WATCHDOG_LINE.match, lines) if m}
    assert set(ops) == set(range(24, 32))
    assert ops[27] != "ALLREDUCE" and {ops[r] for r in ops if r != 27} == {"ALLREDUCE"}


def test_a_log_read_twice_says_the_same():
    ep = opsgym.make("fleet", "black_swan", 4)
    for tool in ("query_nccl_logs", "read_kernel_log"):
        first = ep.step(tool, {"node": 1}).report
        ep.step("check_telemetry")
        assert ep.step(tool, {"node": 1}).report == first


def test_xid_lines_look_like_kernel_messages():
    seen = set()
    for seed in range(12):
        ep = opsgym.make("fleet", "black_swan", seed, config={"level": 3})
        for node in range(4):
            report = ep.step("read_kernel_log", {"node": node}).report
            for line in report["dmesg"].splitlines():
                m = KERNEL_LINE.match(line)
                assert m, line
                x = XID_LINE.match(m["msg"])
                if x:
                    seen.add(int(x["xid"]))
                    assert x["bus"] in ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db")
    assert 79 in seen and seen - {79}  # stale decoys and benign red herrings


def test_flight_recorder_dumps_have_the_torch_schema_and_a_ring_buffer_of_2000():
    for seed in range(6):
        ep = opsgym.make("fleet", "hard", seed)
        report = ep.step("inspect_flight_recorder", {"rank": seed}).report
        dump = json.loads(report["dump"])
        assert {"version", "pg_config", "pg_status", "entries"} <= set(dump)
        assert dump["pg_config"]["0"]["desc"] == "default_pg"
        assert set(dump["pg_status"]["0"]) == {
            "last_enqueued_collective",
            "last_started_collective",
            "last_completed_collective",
        }
        assert len(dump["entries"]) == 4 == report["summary"]["returned"]  # the default window
        for entry in dump["entries"]:
            assert set(entry) == FR_ENTRY_KEYS
            assert entry["state"] in ("scheduled", "started", "completed")
            assert entry["profiling_name"].startswith("nccl:")
        assert dump["warnings"] and "TORCH_NCCL_TRACE_BUFFER_SIZE=2000" in dump["warnings"][0]
        whole = json.loads(
            ep.step("inspect_flight_recorder", {"rank": 0, "last": 2000}).report["dump"]
        )
        seqs = [e["collective_seq_id"] for e in whole["entries"]]
        assert len(seqs) == 2000 and seqs == list(range(seqs[0], seqs[0] + 2000))
    rejected = ep.step("inspect_flight_recorder", {"rank": 0, "last": 2001}).rejected
    assert "less than or equal to 2000" in rejected


def test_benchmark_prints_an_all_reduce_perf_row():
    report = opsgym.make("fleet", "medium", 1).step("benchmark_allreduce").report
    lines = report["output"].splitlines()
    assert lines[0].split()[:3] == ["#", "size", "count"]
    row = lines[2].split()
    assert int(row[0]) == 1 << 30 and float(row[-2]) == pytest.approx(report["busbw_gbps"], 0.01)


def _scrapes(scenario: str, level: int, n: int):
    """Fresh scrapes of episodes whose fault is never fixed, with the truly degraded source."""
    seeds = iter(range(10_000))
    while n > 0:
        seed = next(seeds)
        present = {"oom_present": True, "oom_pair": False, "congestion_present": True}
        ep = opsgym.make("fleet", scenario, seed, config={"level": level}, overrides=present)
        facts = ep.world.facts
        degraded = (
            ep.observe()["hosts"][facts["oom_rank"] // 8]
            if scenario == "easy"
            else f"spine-{facts['congested_spine']}"
        )
        seen = set()
        while not ep.done and n > 0:
            report = ep.step("check_telemetry").report
            if report["scrape"] not in seen:
                seen.add(report["scrape"])
                n -= 1
                yield report, degraded, ep


def _within(rate: float, p: float, n: int) -> bool:
    return abs(rate - p) <= 3 * math.sqrt(p * (1 - p) / n)


@pytest.mark.parametrize("level", sorted(LEVELS))
def test_red_herrings_and_masking_follow_the_level_rates(level):
    n = 1500
    herrings = masked = 0
    for report, degraded, _ in _scrapes("easy", level, n):
        sources = [a["source"] for a in report["alerts"]]
        herrings += any(s != degraded for s in sources)
        masked += degraded not in sources
    assert _within(herrings / n, LEVELS[level].red_herring, n), herrings / n
    assert _within(masked / n, LEVELS[level].mask, n), masked / n
    spine_masked = sum(
        degraded not in [a["source"] for a in report["alerts"]]
        for report, degraded, _ in _scrapes("medium", level, n)
    )
    assert _within(spine_masked / n, LEVELS[level].mask, n), spine_masked / n


def test_the_record_counts_each_scrape_red_herring_and_mask():
    ep = opsgym.make("fleet", "easy", 4, overrides={"oom_present": True, "oom_pair": False})
    herrings = masked = 0
    host = ep.observe()["hosts"][ep.world.facts["oom_rank"] // 8]
    for _ in range(30):
        report = ep.step("check_telemetry").report
        if report["age_calls"] == 0:
            herrings += any(a["source"] != host for a in report["alerts"])
            masked += host not in [a["source"] for a in report["alerts"]]
    tally = ep.world.truth()["telemetry"]
    assert tally == {"updates": 10, "red_herring": herrings, "degraded": 10, "masked": masked}
