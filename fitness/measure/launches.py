"""Counts a process's Triton launches and, on request, turns them into compilations alone:
the worker counts a candidate's launches, the checker compiles a baseline without running it."""

from __future__ import annotations

import contextlib


class LaunchCounter:
    """Counts Triton launches (compiled and interpreted) made outside warm-up; inside
    `compiling_only`, turns every launch into a compilation alone."""

    def __init__(self):
        self.count = 0
        self.depth = 0  # > 0 while inside a launch: torch ops there are Triton's, not the candidate's
        self.compile_only = False
        self.withheld = 0  # launches that `compiling_only` turned into compilations
        self.compiled: list = []  # what those compilations returned (kernels, or futures of them)

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
        arbitrary config for the calls that count."""
        counter = self

        def tuned_run(tuner, *args, **kwargs):
            if not counter.compile_only:
                return run(tuner, *args, **kwargs)
            tuner.nargs = dict(zip(tuner.arg_names, args))
            try:
                configs = tuner.prune_configs(kwargs) if len(tuner.configs) > 1 else tuner.configs
                for config in configs:
                    tuner.fn.run(*args, **kwargs, **config.all_kwargs())
            finally:
                tuner.nargs = None

        tuned_run.__wrapped__ = run
        return tuned_run
