"""Cheat verdicts from what the sandboxed worker observed: the second layer.

The worker reports facts (Triton launches, aten ops, threads started, host reads, harness
functions that changed) over every call, timed ones included (the worker observes every
call the same way, so none tells the candidate it is watched); the rules live here, in a
process the candidate never runs in.
These reports come from the candidate's own process, so they explain a failure well but
never make a pass: a candidate that silences them still faces the static gate before it
runs and the trusted checker's comparison after. A speed beyond the device's roofline for the case's bytes and flops is
`cheat_implausible`: nothing honest beats physics.
"""

from __future__ import annotations

from fitness.judge.policy.rules import DATA_MOVEMENT_TAG

ALLOWED_TORCH_OPS = frozenset({
    # allocation and filling (the worker poisons fresh allocations with NaN or an infinity)
    "empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided",
    "zeros", "zeros_like", "ones", "ones_like", "full", "full_like", "new_zeros", "new_ones",
    "new_full", "zero_", "fill_", "scalar_tensor", "lift_fresh", "arange", "resize_",
    # views and reshapes
    "view", "_unsafe_view", "reshape", "_reshape_alias", "as_strided", "t", "transpose",
    "permute", "expand", "squeeze", "unsqueeze", "slice", "select", "split",
    "split_with_sizes", "chunk", "unbind", "narrow", "alias", "detach", "diagonal",
    "view_as_real", "view_as_complex", "unfold",
    # copies, casts, scalar reads
    "clone", "copy_", "_to_copy", "to", "contiguous", "_local_scalar_dense", "record_stream",
})
"""aten ops any candidate may call through torch: allocation, views, reshapes, copies, casts."""

TORCH_COPIES = frozenset({"clone", "copy_", "_to_copy", "contiguous"})
"""Copies through torch. Beside a kernel they are layout work; in a task tagged data-movement
(transpose, flip2d) a copy from a reordering view is the task's whole work, so there the
runtime audit refuses them, as the gate refuses the reordering views."""

TAINTING_KINDS = frozenset({"cheat_patched_harness", "cheat_background_work"})
"""Verdicts after which the worker process itself is suspect and is replaced."""

PLAUSIBLE_ROOFLINE_FRACTION = 1.5
"""A measured time this many times faster than the roofline floor is not believed."""


def call_verdict(task, observed: dict) -> tuple[str, str] | None:
    """Returns (failure kind, detail) for a call that broke a rule, None for a clean call."""
    if observed.get("patched"):
        return ("cheat_patched_harness", "the candidate replaced harness functions: "
                + ", ".join(observed["patched"][:8]))
    if observed.get("threads_started"):
        return ("cheat_background_work", f"the candidate started {observed['threads_started']} "
                "thread(s) during the call; do all work in Triton kernels on the calling thread")
    if observed.get("host_reads"):
        return ("cheat_torch_compute", f"the candidate read tensors into NumPy/Python "
                f"{observed['host_reads']} time(s) during the call; do the math in Triton")
    allowed = ALLOWED_TORCH_OPS | set(task.torch_allowlist)
    if DATA_MOVEMENT_TAG in task.tags:
        allowed -= TORCH_COPIES
    forbidden = sorted(set(observed.get("ops", ())) - allowed)
    if forbidden:
        return ("cheat_torch_compute", "the candidate computed with torch ops outside the "
                f"allowlist: {', '.join(forbidden)} (only allocation, views, copies and casts "
                "may go through torch; do the math in Triton)")
    if observed.get("launches", 0) < 1:
        return ("no_triton_launch", "the call launched no Triton kernel")
    return None


def implausible(roofline_fraction: float | None, case_name: str) -> str | None:
    """Returns why a measured latency is not believable, or None."""
    if roofline_fraction is not None and roofline_fraction > PLAUSIBLE_ROOFLINE_FRACTION:
        return (f"case {case_name!r} ran at {roofline_fraction:.1f}x the device's roofline "
                "(memory bandwidth and peak flops for its bytes and flops): not physically possible")
    return None
