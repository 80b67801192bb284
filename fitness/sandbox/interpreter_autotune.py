"""On the CPU interpreter `@triton.autotune` runs each config once and keeps the first.

Triton's autotuner times its configs with the active driver's benchmarker, and the
interpreter has no driver: every autotuned candidate failed with "0 active drivers", though
most kernels LLMs write autotune. A time measured by the interpreter says nothing about a
GPU, so there each config is launched once, untimed (a config that cannot run fails the
candidate, as it would on a GPU), and all report the same time: the autotuner's own choice
of the fastest then keeps the first config. On a GPU Triton's benchmarker is left alone.
"""

from __future__ import annotations


def _launch_once(kernel_call, quantiles) -> list[float]:
    """A benchmarker that runs the config's launch once and reports no time at all."""
    kernel_call()
    return [0.0] * len(quantiles)


def install(backend: str) -> None:
    """Makes every Autotuner of this process use `_launch_once` when `backend` is the
    interpreter (a candidate's own `do_bench` would need a driver too); else does nothing."""
    if backend != "interpreter":
        return
    from triton.runtime import autotuner

    autotuner.Autotuner.do_bench = property(lambda tuner: _launch_once)
