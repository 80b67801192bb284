"""The judge's clock knobs that the timing scripts compare (`fitness.judge.clock.QUIET` and
`WARM`), as command-line options: one definition for judge_clock_check and fitness_bench."""

from __future__ import annotations

import argparse


def add(parser: argparse.ArgumentParser) -> None:
    """Adds `--warm` and `--quiet` to `parser`."""
    parser.add_argument("--warm", action="store_true",
                        help="launch each case's graph once when captured, outside the clock "
                             "(`fitness.judge.clock.WARM`), to compare")
    parser.add_argument("--quiet", choices=("all", "ends", "off"), default="all",
                        help="what a timing hold holds off of the pools' workers' ends and "
                             "start-ups (`fitness.judge.clock.QUIET`), to compare")


def apply(args: argparse.Namespace) -> None:
    """Sets the clock's knobs as `args` says, in this process, before an Evaluator is made."""
    from fitness.judge import clock

    clock.QUIET = args.quiet
    clock.WARM = args.warm
