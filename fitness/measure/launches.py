"""Counts a process's Triton launches and, on request, turns them into compilations alone:
the worker counts a candidate's launches, the checker compiles a baseline without running it.
Where a reference runs for its outputs (a suite's harness run, every reference in a
checker), every autotuner runs one config that compiles instead of benchmarking them all
(`one_config`)."""

from __future__ import annotations

import contextlib


class LaunchCounter:
    """Counts Triton launches (compiled and interpreted) made outside warm-up; inside
    `compiling_only`, turns every launch into a compilation alone; with `one_config`, an
    autotuner launches one config that compiles (`_one_config_run`), benchmarking none."""

    def __init__(self):
        self.count = 0
        self.depth = 0  # > 0 while inside a launch: torch ops there are Triton's, not the candidate's
        self.compile_only = False
        self.withheld = 0  # launches that `compiling_only` turned into compilations
        self.compiled: list = []  # what those compilations returned (kernels, or futures of them)
        self.one_config = False

    def install(self) -> None:
        from triton.runtime import autotuner, interpreter, jit

        for cls in (jit.JITFunction, interpreter.InterpretedFunction):
            cls.run = self._wrap(cls.run)
        autotuner.Autotuner.run = self._wrap_autotuner(autotuner.Autotuner.run)

    @contextlib.contextmanager
    def compiling_only(self):
        """Inside the block a kernel launch compiles the kernel (Triton's own warm-up path)
        and launches nothing: the candidate's kernels compile without touching the device."""
        self.compile_only = True
        try:
            yield
        finally:
            self.compile_only = False

    def _wrap(self, run):
        counter = self

        def counted_run(kernel, *args, grid, warmup, **kwargs):
            if counter.compile_only and not warmup:
                counter.withheld += 1
                warmup = True
            if not warmup:
                counter.count += 1
            if callable(grid):
                grid = counter._seen(grid)
            counter.depth += 1
            try:
                compiled = run(kernel, *args, grid=grid, warmup=warmup, **kwargs)
            finally:
                counter.depth -= 1
            if counter.compile_only and compiled is not None:
                counter.compiled.append(compiled)
            return compiled

        counted_run.__wrapped__ = run
        return counted_run

    def _seen(self, grid):
        """Returns `grid` run outside the launch's depth: Triton calls it inside the launch,
        where torch ops are Triton's own and go unrecorded, so a grid function that computed
        the task with torch (`o[:] = x + y`) would do so unseen; they are the candidate's."""
        counter = self

        def seen_grid(*args, **kwargs):
            counter.depth -= 1
            try:
                return grid(*args, **kwargs)
            finally:
                counter.depth += 1

        return seen_grid

    def _wrap_autotuner(self, run):
        """Returns Autotuner.run that, compiling only, compiles each config it would benchmark
        and keeps no choice: a benchmark of launches that never happen would cache an
        arbitrary config for the calls that count. With `one_config`, it runs one config that
        compiles and fits the device, as the autotuner itself would skip one that does not
        (`_one_config_run`)."""
        counter = self

        def tuned_run(tuner, *args, **kwargs):
            if counter.one_config and not counter.compile_only and len(tuner.configs) > 1:
                return _one_config_run(run, tuner, args, kwargs)
            if not counter.compile_only:
                return run(tuner, *args, **kwargs)
            configs = _pruned(tuner, args, kwargs) if len(tuner.configs) > 1 else tuner.configs
            for config in configs:
                tuner.fn.run(*args, **kwargs, **config.all_kwargs())

        tuned_run.__wrapped__ = run
        return tuned_run


def _pruned(tuner, args: tuple, kwargs: dict) -> list:
    """Returns the configs `tuner` would benchmark for this call (its pruning reads the call's
    arguments from `tuner.nargs`, set for the call only)."""
    tuner.nargs = dict(zip(tuner.arg_names, args))
    try:
        return tuner.prune_configs(kwargs)
    finally:
        tuner.nargs = None


def _one_config_run(run, tuner, args: tuple, kwargs: dict):
    """Runs `tuner` held to one config: of its pruned configs, the first with the most warps
    whose launch does not fail as the autotuner's own benchmark skips a config (too many
    resources, a compile-time assertion, ptxas). The configs of an autotuner differ in speed,
    not in what they compute, and a suite's reference that benchmarks them all can take
    minutes (TritonBench-revised's int8_dequant_matmul: 418 configs for each of its shapes,
    still tuning after 100 s). Most warps: a thread's share of the tile shrinks
    with them, and so does the compile (chunk_retention_ops's backward with one warp was
    still compiling after 100 s; RESULTS.md#reference-autotune). The tuner runs as given for
    a single config (Triton's own path, its pre-hook included)."""
    from triton.runtime import autotuner

    skipped = tuple(getattr(autotuner, name) for name in ("OutOfResources", "CompileTimeAssertionFailure",
                                                          "PTXASError") if hasattr(autotuner, name))
    configs = sorted(_pruned(tuner, args, kwargs), key=lambda config: -(config.num_warps or 0))
    every = tuner.configs
    for at, config in enumerate(configs):
        tuner.configs = [config]
        try:
            return run(tuner, *args, **kwargs)
        except skipped:
            if at == len(configs) - 1:
                raise
        finally:
            tuner.configs = every
