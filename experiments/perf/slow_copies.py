"""Which copies of one kernel read slow in a fitness_bench batch, and what their log says.

fitness_bench's candidates include copies of each task's baseline: one kernel, scored
several times in one batch. On an H200 some copies read 3-14x slower than the others in
every batch of a case (RESULTS.md §36). This reads `fitness_bench.py --cases-out FILE`'s log
of timed cases and, where there, `FILE.pmon.txt` (`nvidia-smi pmon`, one line a process a
second), and prints per case every copy past `--slow` times the case's fastest: its batches'
per-run readings, its fills' GB/s against the case's fastest copy's, the holders its hold
went ahead beside, how it stopped, and the processes pmon shows busy within a second of it.

    python3 experiments/perf/slow_copies.py FILE [--slow 1.2]
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import statistics


def _quiet_wait(entry: dict) -> str:
    """How long the case waited for the device to be quiet before its batches (fitness-31:
    what the holders beside it had queued), where it did."""
    quiet = entry.get("quiet")
    if not quiet:
        return ""
    return f", waited {quiet['waited_ms']:.1f} ms for quiet" + ("" if quiet["quiet"] else " (never quiet)")


def read_pmon(path: str) -> list[tuple[float, str]]:
    """Returns (epoch seconds, the line) per process line of `nvidia-smi pmon -o DT` (date
    and time first, read as UTC: the GPU machine's clock) whose SM share is above 0."""
    if not os.path.exists(path):
        return []
    lines = []
    with open(path) as handle:
        for line in handle:
            fields = line.split()
            if len(fields) < 6 or line.startswith("#"):
                continue
            try:
                when = datetime.datetime.strptime(f"{fields[0]} {fields[1]}", "%Y%m%d %H:%M:%S")
            except ValueError:
                continue
            if fields[5].isdigit() and int(fields[5]) > 0:  # date time gpu pid type sm ...
                lines.append((when.replace(tzinfo=datetime.timezone.utc).timestamp(), line.strip()))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log")
    parser.add_argument("--slow", type=float, default=1.2,
                        help="a copy is slow past this many times the case's fastest copy")
    args = parser.parse_args()
    with open(args.log) as handle:
        entries = [json.loads(line) for line in handle if line.strip()]
    pmon = read_pmon(f"{args.log}.pmon.txt")
    copies = collections.defaultdict(list)
    for entry in entries:
        if entry["candidate"] is not None:
            copies[(entry["task"], entry["case"])].append(entry)
    start = min(entry["at"] for entry in entries) if entries else 0.0
    slow_count = 0
    for (task, case), found in sorted(copies.items()):
        fastest = min(found, key=lambda entry: entry["median_us"])
        best_gbps = statistics.median(fastest["fill_gbps"]) if fastest["fill_gbps"] else None
        for entry in found:
            ratio = entry["median_us"] / fastest["median_us"]
            if ratio < args.slow:
                continue
            slow_count += 1
            gbps = "/".join(f"{g:.0f}" for g in entry["fill_gbps"]) or "-"
            print(f"{task} {case}: {ratio:.2f}x the fastest of {len(found)} copies at "
                  f"{entry['at'] - start:.1f} s; batches "
                  f"{'/'.join(f'{us:.1f}' for us in entry['per_run_us'])} us against "
                  f"{fastest['median_us']:.1f}; fills {gbps} GB/s against "
                  f"{'-' if best_gbps is None else f'{best_gbps:.0f}'}; {entry['method']}, "
                  f"{entry['stopped']}, beside {entry['beside']}{_quiet_wait(entry)}")
            for when, line in pmon:
                if abs(when - entry["wall"]) <= 1.0:
                    print(f"    pmon: {line}")
    print(f"{slow_count} slow copies past {args.slow:g}x over {len(copies)} cases with copies; "
          f"{len(entries)} timed cases logged")


if __name__ == "__main__":
    main()
