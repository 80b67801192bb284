"""Soak: an offline campaign of at least 30 minutes, every process it started sampled each
minute for resident memory, open file descriptors and threads. An overnight run must not leak:
after the warm-up, no role's totals may grow by more than 10%.

    python3 experiments/perf/soak.py --minutes 32 --warmup-minutes 5 --out results/soak

The campaign is `evo run` on experiments/quickstart.toml with generations raised so only the
wall-time cap stops it. Processes are grouped by role (the driver, each Ray actor class, Ray's
own daemons, the sandboxed fitness workers) because workers are replaced after faults and
pids do not last: a role's totals are what would grow. Read from /proc (Linux), nothing else.
"""

from __future__ import annotations

import argparse
import csv
import os
import pathlib
import subprocess
import sys
import time
from collections import defaultdict

ROOT = pathlib.Path(__file__).resolve().parents[2]
METRICS = ("rss_mib", "fds", "threads")


def _children() -> dict[int, list[int]]:
    """Returns {parent pid: [child pids]} of every process this user can read."""
    tree = defaultdict(list)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = pathlib.Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            tree[int(fields[1])].append(int(entry))
    return tree


def descendants(root: int) -> list[int]:
    """Returns `root` and every process below it."""
    tree, found, todo = _children(), [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(tree.get(pid, []))
    return found


def role(pid: int) -> str:
    """Returns what a process is: `ray::Class` for an actor, a module or program otherwise."""
    argv = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    argv = [a.decode(errors="replace") for a in argv if a]
    if not argv:
        return "?"
    if argv[0].startswith("ray::"):
        return argv[0].split(".")[0].split()[0]
    if "-m" in argv[:-1]:
        return argv[argv.index("-m") + 1]
    scripts = [a for a in argv[1:] if a.endswith(".py")]
    return os.path.basename(scripts[0] if scripts else argv[0])


def sample(pid: int) -> dict[str, float]:
    """Returns one process's resident memory (MiB), open descriptors and threads."""
    status = dict(line.split(":", 1) for line in
                  pathlib.Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return {"rss_mib": int(status["VmRSS"].split()[0]) / 1024 if "VmRSS" in status else 0.0,
            "fds": len(os.listdir(f"/proc/{pid}/fd")), "threads": int(status["Threads"])}


def snapshot(root: int) -> dict[str, dict[str, float]]:
    """Returns {role: totals of METRICS and the process count} over `root`'s process tree."""
    totals: dict[str, dict[str, float]] = defaultdict(lambda: dict.fromkeys(METRICS + ("n",), 0))
    for pid in descendants(root):
        try:
            name, measured = role(pid), sample(pid)
        except (OSError, KeyError, ValueError):  # gone between listing and reading
            continue
        for key, value in measured.items():
            totals[name][key] += value
        totals[name]["n"] += 1
    return totals


def growth(rows: list[dict], warmup_min: float) -> list[tuple]:
    """Returns (role, metric, start, end, max, growth %, slope per hour) after the warm-up.

    Start and end are medians of the first and last three samples, so one sample taken just
    after a worker was replaced (its memory not yet back) is not read as a trend; the slope
    is a least-squares line through every sample, what an overnight run would add."""
    report = []
    for name in sorted({r["role"] for r in rows}):
        mine = [r for r in rows if r["role"] == name and r["minute"] >= warmup_min]
        if len(mine) < 6:
            continue
        minutes = [r["minute"] for r in mine]
        mean_minute = sum(minutes) / len(minutes)
        spread = sum((m - mean_minute) ** 2 for m in minutes) or 1.0
        for metric in METRICS:
            values = [r[metric] for r in mine]
            first, last = sorted(values[:3])[1], sorted(values[-3:])[1]
            mean_value = sum(values) / len(values)
            slope = sum((m - mean_minute) * (v - mean_value)
                        for m, v in zip(minutes, values)) / spread
            report.append((name, metric, first, last, max(values),
                           100.0 * (last - first) / first if first else 0.0, 60.0 * slope))
    return report


def print_growth(rows: list[dict], warmup_min: float) -> None:
    print(f"growth after minute {warmup_min:g} (medians of the first and last three samples; "
          "slope per hour by least squares):")
    for name, metric, first, last, peak, percent, per_hour in growth(rows, warmup_min):
        flag = "" if percent <= 10.0 else "  <-- over 10%"
        print(f"  {name:28s} {metric:8s} {first:8.1f} -> {last:8.1f} (max {peak:8.1f}) "
              f"{percent:+6.1f}% {per_hour:+8.1f}/h{flag}")


def read_samples(path: pathlib.Path) -> list[dict]:
    with open(path, newline="") as handle:
        return [{**row, **{k: float(row[k]) for k in ("minute", "n", *METRICS)}}
                for row in csv.DictReader(handle)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=32.0)
    parser.add_argument("--warmup-minutes", type=float, default=5.0)
    parser.add_argument("--every-s", type=float, default=60.0)
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "results" / "soak")
    parser.add_argument("--from-csv", type=pathlib.Path, help="only report an earlier samples.csv")
    args = parser.parse_args()
    if args.from_csv:
        print_growth(read_samples(args.from_csv), args.warmup_minutes)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "evo", "run", str(ROOT / "experiments" / "quickstart.toml"),
               "--out", str(args.out / "campaign"), "--set", "search.generations=100000",
               "--set", f"budget.max_wall_seconds={60 * args.minutes:.0f}"]
    with open(args.out / "campaign.log", "w") as log:
        driver = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    rows, started = [], time.monotonic()
    while driver.poll() is None:
        minute = (time.monotonic() - started) / 60
        for name, totals in snapshot(driver.pid).items():
            rows.append({"minute": round(minute, 2), "role": name, **totals})
        print(f"{minute:5.1f} min: " + ", ".join(
            f"{r['role']} x{r['n']:.0f} {r['rss_mib']:.0f} MiB {r['fds']:.0f} fds "
            f"{r['threads']:.0f} thr" for r in rows if r["minute"] == round(minute, 2)), flush=True)
        deadline = time.monotonic() + args.every_s
        while driver.poll() is None and time.monotonic() < deadline:
            time.sleep(1.0)
    with open(args.out / "samples.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["minute", "role", "n", *METRICS])
        writer.writeheader()
        writer.writerows(rows)
    print(f"campaign exit {driver.returncode} after {(time.monotonic() - started) / 60:.1f} min")
    print_growth(rows, args.warmup_minutes)

if __name__ == "__main__":
    main()
