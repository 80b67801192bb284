"""The `evo` command line: tasks, eval, gate, run, report, export, view, sweep.

Each command parses its arguments and hands over to the room that does the work;
imports are lazy so `evo tasks` does not pay for Ray or torch start-up.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import List, Optional

import typer
import typer.core

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="KernelEvo: evolutionary search over populations of Triton kernels.")


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=2)


@contextlib.contextmanager
def _failing_on(*errors: type[Exception]):
    """Turns an error of the kinds `errors` (the user's to fix) into `_fail`'s one line."""
    try:
        yield
    except errors as error:
        _fail(str(error))


@app.command()
def tasks(
    suite: Optional[str] = typer.Option(None, help="builtin | tritonbench-revised | rocm | kernelbench"),
    path: Optional[Path] = typer.Option(None, help="local checkout of an external suite"),
    as_json: bool = typer.Option(False, "--json", help="print {\"tasks\": [...]} instead of a table"),
) -> None:
    """List tasks: name, suite, entry point and signature, difficulty, dtypes, cases, and
    where each runs (cuda / rocm / interpreter) with why not elsewhere."""
    from benchmarks import listing, registry

    with _failing_on(ValueError, FileNotFoundError):
        found = registry.load(suite, str(path) if path else None).tasks()
    if as_json:
        typer.echo(json.dumps({"tasks": [listing.task_summary(t) for t in found]}))
    else:
        listing.print_table(found)


EVAL_FAILED = 1
"""`evo eval`'s exit status when a file's verdict is FAILED (2 is a usage error)."""


@app.command("eval")
def eval_(
    task: str = typer.Argument(..., help="task name (see `evo tasks`)"),
    files: List[Path] = typer.Argument(..., help="candidate module files"),
    as_json: bool = typer.Option(False, "--json", help="one JSON object per file, one per line"),
    device: str = typer.Option("auto", help="auto | cuda | rocm | interpreter"),
    timeout: Optional[float] = typer.Option(
        None, help="one time limit for every stage, in seconds (default: a campaign's own "
                   "limits, [fitness.timeouts] in docs/config.md)"),
    suite: Optional[str] = typer.Option(None, help="suite of the task (default builtin)"),
    path: Optional[Path] = typer.Option(None, help="local checkout of an external suite"),
    sandbox: str = typer.Option("bwrap", help="bwrap (score inside the OS sandbox) | off "
                                              "(without it; every line then says so)"),
) -> None:
    """Evaluate candidate files against a task. Exit status: 0 every file correct, 1 some
    file FAILED (its line says why), 2 a usage error (nothing scored)."""
    import fitness

    with _failing_on(fitness.UsageError):
        evaluations = fitness.evaluate_files(
            task, [str(f) for f in files], as_json=as_json, device=device, timeout_s=timeout,
            suite=suite, path=str(path) if path else None, sandbox=sandbox)
    if not all(evaluation.correct for evaluation in evaluations):
        raise typer.Exit(code=EVAL_FAILED)



@app.command("gate")
def gate(
    task: Optional[str] = typer.Argument(None, help="task name (see `evo tasks`)"),
    files: Optional[List[Path]] = typer.Argument(None, help="candidate module files"),
    references: bool = typer.Option(False, "--references", help="gate each task's own reference "
                                                                "as a candidate of its task"),
    as_json: bool = typer.Option(False, "--json", help="one JSON object per file, one per line"),
    suite: Optional[str] = typer.Option(None, help="suite of the task (default builtin)"),
    path: Optional[Path] = typer.Option(None, help="local checkout of an external suite"),
) -> None:
    """Check files with the static gate alone, nothing imported or run (exit 1: a file is refused)."""
    import fitness

    with _failing_on(fitness.UsageError):
        verdicts = fitness.gate_files(task, [str(f) for f in files or []], as_json=as_json,
                                      suite=suite, path=str(path) if path else None,
                                      references=references)
    if not all(v.allowed for v in verdicts):
        raise typer.Exit(code=1)


@app.command()
def run(
    config: Path = typer.Argument(..., help="campaign config (TOML)"),
    out: Optional[Path] = typer.Option(None, help="results folder (default results/<name>-<time>)"),
    resume: bool = typer.Option(False, help="continue the campaign in --out"),
    set_: List[str] = typer.Option([], "--set", help="override a key: section.key=value"),
    address: Optional[str] = typer.Option(None, help="address of a running Ray cluster"),
    preflight: bool = typer.Option(True, help="check the LLM endpoint with one request before "
                                              "starting (--no-preflight: for endpoints that "
                                              "charge per request)"),
    debug: bool = typer.Option(False, help="show the traceback of a fatal error on the "
                                           "terminal too (it is always in DIR/evo-run.log)"),
) -> None:
    """Run a campaign (exit 2: bad config or unusable endpoint; 3: stopped, LLM calls failing;
    4: a fatal cause such as a full disk; 143/130: stopped by SIGTERM/SIGINT)."""
    from evo import campaign, config as config_lib, stopping

    with _failing_on(config_lib.ConfigError):
        status = campaign.main(config, out=out, resume=resume, overrides=set_, address=address,
                               check_endpoint=preflight, debug=debug)
    if status in stopping.EXIT_STATUS.values():
        stopping.exit_now(status)
    if status:
        raise typer.Exit(code=status)


class _OptionalHtmlValue(typer.core.TyperCommand):
    """Lets `--html` stand alone (`evo report DIR --html`): with no value after it, it gets
    the empty value, which means DIR/report.html. Typer has no optional option values."""

    def parse_args(self, ctx, args):
        args = list(args)
        for i, arg in enumerate(args):
            if arg == "--html" and (i + 1 == len(args) or args[i + 1].startswith("-")):
                args[i] = "--html="
        return super().parse_args(ctx, args)


@app.command(cls=_OptionalHtmlValue)
def report(
    directory: Path = typer.Argument(..., help="a campaign's or a sweep's results folder"),
    as_json: bool = typer.Option(False, "--json"),
    html: Optional[str] = typer.Option(
        None, "--html", metavar="[OUT]",
        help="write one self-contained HTML page instead of the tables (default OUT: "
             "DIR/report.html)"),
    torch_timings: Optional[Path] = typer.Option(
        None, help="torch timings (experiments/perf/torch_baselines.py) to compare the best "
                   "kernels with (default: DIR/torch_timings.parquet when present)"),
) -> None:
    """Print metrics tables and write figures for a results folder (--html: an HTML page)."""
    if html is not None:
        if as_json:
            _fail("--html and --json each say what to print: give one")
        from evo.analysis import html_report

        with _failing_on(FileNotFoundError, ValueError):
            written = html_report.write(directory, html or None, torch_timings=torch_timings)
        typer.echo(f"wrote {written}")
        return
    from evo.analysis import report as report_lib

    with _failing_on(FileNotFoundError, ValueError):
        report_lib.main(directory, as_json=as_json, torch_timings=torch_timings)


@app.command()
def export(
    directory: Path = typer.Argument(..., help="a campaign's results folder, or a sweep's (the "
                                              "best over every cell)"),
    task: Optional[str] = typer.Option(None, help="the task whose best candidate to write "
                                                  "(needed when the folder has several)"),
    candidate: Optional[str] = typer.Option(None, help="any candidate instead, by id or a "
                                                       "unique prefix of it"),
    out: Optional[Path] = typer.Option(None, help="file to write (default "
                                                  "DIR/exported/<task>-<id>.py)"),
) -> None:
    """Write a task's best candidate (as `evo report` names it), or any candidate by id, to a
    Python file that `evo eval TASK FILE` scores again."""
    from evo import export as export_lib

    with _failing_on(FileNotFoundError, ValueError, OSError):
        typer.echo(export_lib.text(export_lib.export(directory, task, candidate, out)))


@app.command()
def view(
    directory: Path = typer.Argument(..., help="a campaign's or a sweep's results folder"),
    host: str = typer.Option("127.0.0.1", help="address to listen on (loopback by default)"),
    port: int = typer.Option(8765, help="port to listen on (0: a free one)"),
) -> None:
    """Serve the HTML page of a results folder, updated as new Parquet parts land (read-only)."""
    from evo import view as view_lib

    with _failing_on(OSError):
        view_lib.main(directory, host=host, port=port)


@app.command()
def sweep(
    sweep_file: Path = typer.Argument(..., help="sweep definition (TOML)"),
    out: Optional[Path] = typer.Option(None, help="sweep folder"),
    preflight: bool = typer.Option(True, help="check each LLM endpoint once before any cell runs"),
    overrides: List[str] = typer.Option([], "--set", help="section.key=value in every cell, "
                                                          "over the file's [set] (repeatable)"),
) -> None:
    """Run every cell of a sweep (cells done are skipped, one cut short resumes; 130/143:
    stopped by SIGINT/SIGTERM, rerun the same command to continue)."""
    from evo import config as config_lib, stopping, sweep as sweep_lib

    with _failing_on(config_lib.ConfigError):
        status = sweep_lib.main(sweep_file, out=out, check_endpoints=preflight,
                                overrides=overrides)
    if status in stopping.EXIT_STATUS.values():
        stopping.exit_now(status)
    if status:
        raise typer.Exit(code=status)
