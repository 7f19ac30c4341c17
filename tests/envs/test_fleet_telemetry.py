"""The fleet's telemetry: log lines parse with the formats they imitate, and red herrings and
masking follow the curriculum level's rates within sampling error."""

from __future__ import annotations

import math
import re

import pytest

import opsgym
from opsgym.envs.fleet.tasks import LEVELS

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
    r"[\d.]+ GiB\. GPU [0-7] has a total capacity of [\d.]+ GiB of which [\d.]+ MiB is free\.$"
)
KERNEL_LINE = re.compile(r"^\[\s*\d+\.\d{6}\] (?P<msg>.+)$")
XID_LINE = re.compile(
    r"^NVRM: Xid \(PCI:0000:(?P<bus>[0-9a-f]{2}):00\): (?P<xid>\d+), pid=\d+, name=\S+, .+$"
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
    for scenario in ("easy", "hard", "fleet_coordination"):
        for seed in range(4):
            ep = opsgym.make("fleet", scenario, seed)
            hosts, pids = ep.observe()["hosts"], ep.world.inv.pids
            for node in range(4):
                report = ep.step("query_nccl_logs", {"node": node}).report
                kinds = set()
                for line in report["lines"]:
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
                    assert OOM_LINE.match(line), line
                assert "INFO" in kinds
                versions = [line for line in report["lines"] if "NCCL INFO NCCL version" in line]
                assert len(versions) == 8
                assert all(re.search(r"NCCL version 2\.\d+\.\d+\+cuda12\.4$", v) for v in versions)


def test_watchdog_lines_name_the_rank_that_issued_a_different_collective():
    ep = opsgym.make("fleet", "hard", 3, overrides={"desync_rank": 27})
    lines = ep.step("query_nccl_logs", {"node": 3}).report["lines"]
    ops = {int(m["rank"]): m["op"] for m in map(WATCHDOG_LINE.match, lines) if m}
    assert set(ops) == set(range(24, 32))
    assert ops[27] != "ALLREDUCE" and {ops[r] for r in ops if r != 27} == {"ALLREDUCE"}


def test_xid_lines_look_like_kernel_messages():
    seen = set()
    for seed in range(12):
        ep = opsgym.make("fleet", "black_swan", seed)
        for node in range(4):
            report = ep.step("read_kernel_log", {"node": node}).report
            for line in report["lines"]:
                m = KERNEL_LINE.match(line)
                assert m, line
                x = XID_LINE.match(m["msg"])
                if x:
                    seen.add(int(x["xid"]))
                    assert x["bus"] in ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db")
    assert 79 in seen and seen - {79}  # the real one and benign red herrings


def test_flight_recorder_payloads_have_the_torch_dump_schema():
    warned = 0
    for seed in range(10):
        ep = opsgym.make("fleet", "hard", seed)
        dump = ep.step("inspect_flight_recorder", {"rank": seed}).report["dump"]
        assert {"version", "pg_config", "pg_status", "entries"} <= set(dump)
        assert dump["pg_config"]["0"]["desc"] == "default_pg"
        assert set(dump["pg_status"]["0"]) == {
            "last_enqueued_collective",
            "last_started_collective",
            "last_completed_collective",
        }
        for entry in dump["entries"]:
            assert set(entry) == FR_ENTRY_KEYS
            assert entry["state"] in ("scheduled", "started", "completed")
            assert entry["profiling_name"].startswith("nccl:")
        warned += bool(dump["warnings"])
        assert all("buffer" in w for w in dump["warnings"])
    assert 0 < warned < 10


def test_benchmark_prints_an_all_reduce_perf_row():
    report = opsgym.make("fleet", "medium", 1).step("benchmark_allreduce").report
    assert report["lines"][0].split()[:3] == ["#", "size", "count"]
    row = report["lines"][2].split()
    assert int(row[0]) == 1 << 30 and float(row[-2]) == pytest.approx(report["busbw_gbps"], 0.01)


def _scrapes(scenario: str, level: int, n: int):
    """Fresh scrapes of episodes whose fault is never fixed, with the truly degraded source."""
    seeds = iter(range(10_000))
    while n > 0:
        seed = next(seeds)
        ep = opsgym.make("fleet", scenario, seed, config={"level": level})
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
    ep = opsgym.make("fleet", "easy", 4)
    herrings = masked = 0
    host = ep.observe()["hosts"][ep.world.facts["oom_rank"] // 8]
    for _ in range(30):
        report = ep.step("check_telemetry").report
        if report["age_calls"] == 0:
            herrings += any(a["source"] != host for a in report["alerts"])
            masked += host not in [a["source"] for a in report["alerts"]]
    tally = ep.world.truth()["telemetry"]
    assert tally == {"updates": 10, "red_herring": herrings, "degraded": 10, "masked": masked}
