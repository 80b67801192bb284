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

TORCH_SHARE = 0.1
"""The most torch may do of a call's work, as elements touched by its ops over the elements of
the call's inputs: a host `.mean()` of a kernel's partial results, a loss summed over rows or
a few `.item()` reads are far below it; the task computed by torch (in the entry point, a grid
function or a launch hook), or read and written element by element on the host, is far
above it."""

VALUE_ACCESS = frozenset({"_local_scalar_dense", "fill_", "copy_", "zero_", "index_put_",
                          "masked_fill_"})
"""Allowed ops that read or write values: called on one element, a host read or write."""

TORCH_FEW_ELEMENTS = 64
"""Elements torch may touch in any call, whatever its inputs (a size read with `.item()`)."""

TAINTING_KINDS = frozenset({"cheat_patched_harness", "cheat_background_work"})
"""Verdicts after which the worker process itself is suspect and is replaced."""

PLAUSIBLE_ROOFLINE_FRACTION = 1.5
"""A measured time this many times faster than the roofline floor is not believed."""


def call_verdict(task, observed: dict) -> tuple[str, str] | None:
    """Returns (failure kind, detail) for a call that broke a rule, None for a clean call.
    An external suite's task (timed on its performance inputs) keeps its suite's contract,
    a Triton launch: torch's share of the work and host reads are not judged there, and
    are timed with the rest of the call."""
    if observed.get("patched"):
        return ("cheat_patched_harness", "the candidate replaced harness functions: "
                + ", ".join(observed["patched"][:8]))
    if observed.get("threads_started"):
        return ("cheat_background_work", f"the candidate started {observed['threads_started']} "
                "thread(s) during the call; do all work in Triton kernels on the calling thread")
    external = "external" in task.tags
    if observed.get("host_reads") and not external:
        return ("cheat_torch_compute", f"the candidate read tensors into NumPy/Python "
                f"{observed['host_reads']} time(s) during the call; do the math in Triton")
    share = None if external else torch_share(task, observed)
    if share is not None:
        return ("cheat_torch_compute", share)
    if observed.get("launches", 0) < 1:
        return ("no_triton_launch", "the call launched no Triton kernel")
    return None


def torch_share(task, observed: dict) -> str | None:
    """Returns why torch did the task's work in a call, or None: its ops outside allocation,
    views, copies and casts (`ALLOWED_TORCH_OPS`, widened by the task's `torch_allowlist`;
    copies count in a data-movement task) touched more elements in one call than
    `TORCH_SHARE` of the call's inputs (and more than `TORCH_FEW_ELEMENTS`), counting every
    single-value read or write (`.item()`, `float(v)`, `v.fill_(...)`) as one element."""
    allowed = ALLOWED_TORCH_OPS | set(task.torch_allowlist)
    if DATA_MOVEMENT_TAG in task.tags:
        allowed -= TORCH_COPIES
    work = observed.get("work") if isinstance(observed.get("work"), dict) else {}
    touched, doing = 0, []
    for name, counts in work.items():
        elements, single = (counts + [0, 0])[:2] if isinstance(counts, list) else (0, 0)
        done = elements if name not in allowed else single if name in VALUE_ACCESS else 0
        if isinstance(done, int) and done > 0:
            touched += done
            doing.append(name)
    inputs = observed.get("input_elements")
    inputs = inputs if isinstance(inputs, int) and inputs > 0 else 0
    if touched <= max(TORCH_SHARE * inputs, TORCH_FEW_ELEMENTS):
        return None
    return (f"torch did the task's work: its ops ({', '.join(sorted(doing)[:8])}) touched "
            f"{touched} elements in one call, {touched / max(inputs, 1):.0%} of the "
            f"{inputs} elements of the call's inputs; at most {TORCH_SHARE:.0%} may go through "
            "torch (a reduction of a kernel's partial results, a size read with .item()). Do "
            "the math in Triton kernels, and keep single-value reads and writes off the host")


def implausible(roofline_fraction: float | None, case_name: str) -> str | None:
    """Returns why a measured latency is not believable, or None."""
    if roofline_fraction is not None and roofline_fraction > PLAUSIBLE_ROOFLINE_FRACTION:
        return (f"case {case_name!r} ran at {roofline_fraction:.1f}x the device's roofline "
                "(memory bandwidth and peak flops for its bytes and flops): not physically possible")
    return None
