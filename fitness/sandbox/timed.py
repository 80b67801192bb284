"""The worker's side of a timed batch (docs/design.md, "The timed batch"): it runs the
candidate where the judge's clock can see it, and decides nothing.

On a GPU the judge lends one buffer holding N input sets and N output regions, and a page
of host words (`fitness.processes.host_words`). `TimedCase` maps both, warms the candidate up
and captures its N runs in a CUDA graph (eager when capture fails); `arm` enqueues, on one
stream, wait(go) -> the runs -> write(done). Allocations a run makes are served from its
region (`Arena`), so the outputs land where the judge snapshots them, with no copy inside
the clock. Nothing here is trusted: a candidate may rewrite any of it, and gains nothing by
it, since the judge times go..done on its own clock and reads the regions itself.
"""

from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from fitness.measure import timing
from fitness.processes import protocol, shared_memory

_ALIGN = shared_memory.ALIGN_BYTES
_FACTORIES = {"empty": None, "empty_strided": None, "empty_like": None, "new_empty": None,
              "new_empty_strided": None, "zeros": 0, "zeros_like": 0, "new_zeros": 0}
"""Allocating ops served from a run's region, and the value each fills with (None: none)."""


def load_meta_rules() -> None:
    """Runs each allocating op `Arena` serves once on the meta device. Why: the first meta
    `empty_like` in a process imports torch's Python decompositions (about 480 modules,
    0.25-2 s), and a fresh worker per candidate paid it inside its first capture, which is
    staged under the device lock (RESULTS.md#arena-meta-import); the zygote calls this
    before it forks, so every worker starts with them imported."""
    like = torch.empty(1, device="meta")
    torch.empty_like(like), torch.zeros_like(like)
    like.new_empty(1), like.new_empty_strided((1,), (1,)), like.new_zeros(1)


def _meta(value):
    """Returns `value` with tensors swapped for meta tensors of the same layout."""
    if isinstance(value, torch.Tensor):
        return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device="meta")
    return value


class Arena(TorchDispatchMode):
    """Serves a run's device allocations from `region` (a uint8 view of its part of the
    judge's buffer), bump by bump; past its end the normal allocator serves them."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False

    def __init__(self, region: torch.Tensor):
        super().__init__()
        self.region, self.used = region, 0

    def take(self, nbytes: int) -> int | None:
        """Returns the byte offset of `nbytes` more of the region, or None when full."""
        at = -(-self.used // _ALIGN) * _ALIGN
        if at + nbytes > self.region.numel():
            return None
        self.used = at + nbytes
        return at

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        target = kwargs.get("device") or (args[0].device if args and isinstance(args[0], torch.Tensor)
                                          else None)
        if name not in _FACTORIES or target is None or torch.device(target).type != "cuda":
            return func(*args, **kwargs)
        meta = func(*[_meta(a) for a in args], **{**kwargs, "device": "meta"})
        span = protocol.extent(meta.shape, meta.stride(), 0) * meta.element_size()
        at = self.take(max(span, 1))
        if at is None:
            return func(*args, **kwargs)
        out = torch.as_strided(self.region[at:at + span].view(meta.dtype) if span else
                               self.region[at:at].view(meta.dtype), meta.shape, meta.stride())
        if _FACTORIES[name] is not None:
            out.fill_(_FACTORIES[name])
        return out

    def place(self, outputs: list, inputs: list = ()) -> list[dict] | None:
        """Returns each output's spec in the region (copied in, inside the clock, when the
        candidate put it elsewhere), or None when one does not fit. The run has returned,
        so what it allocated in the region and did not return is dead: the copies go after
        the last output already there, over its temporaries (a wrapper whose partials,
        `new_empty(NK, ...)`, filled the region before it summed them outside:
        fused_rwkv6_kernel). An output that is one of the run's lent `inputs`, as laid out
        there (an argument the task writes in place, handed back as an output), is named by
        its position, {"input": at}, and not copied: the judge reads it in its snapshot of
        the lent inputs. Its copy was inside the clock, and an in-place reference
        (adam_update_triton) read 2.0x GEAK-eval's `do_bench` over its inputs
        (evidence: RESULTS.md#written-in-place)."""
        base, specs = self.region.data_ptr(), []
        spans = [(value.data_ptr() - base,
                  protocol.extent(value.shape, value.stride(), 0) * value.element_size())
                 for value in outputs]
        inside = [self._inside(value, at, span) for value, (at, span) in zip(outputs, spans)]
        self.used = max((at + span for (at, span), held in zip(spans, inside) if held), default=0)
        for value, (at, span), held in zip(outputs, spans, inside):
            lent = None if held else _lent_position(value, inputs)
            if lent is not None:
                specs.append({"input": lent})
                continue
            if not held:
                at = self.take(value.numel() * value.element_size())
                if at is None:
                    return None
                view = self.region[at:at + value.numel() * value.element_size()].view(
                    value.dtype).view(value.shape)
                view.copy_(value)
                value = view
            specs.append({"at": at, "dtype": str(value.dtype).removeprefix("torch."),
                          "shape": list(value.shape), "stride": list(value.stride()),
                          "offset": 0})
        return specs

    def _inside(self, value: torch.Tensor, at: int, span: int) -> bool:
        return value.device == self.region.device and 0 <= at <= self.region.numel() - span


def _lent_position(value: torch.Tensor, inputs) -> int | None:
    """Returns the position of the lent input `value` is, as laid out there, or None."""
    for at, lent in enumerate(inputs):
        if (isinstance(lent, torch.Tensor) and lent.device == value.device
                and lent.data_ptr() == value.data_ptr() and lent.dtype == value.dtype
                and lent.shape == value.shape and lent.stride() == value.stride()):
            return at
    return None


class TimedCase:
    """One case's timed runs on the judge's lent buffer (`buffer`, laid out as `where`
    says) and its host words (`words`, a registered `HostWords`); `call(inputs, arena,
    capturing)` runs the candidate once under the worker's instruments and returns its
    outputs as a list."""

    def __init__(self, buffer: shared_memory.SharedBuffer, words, where: dict, call):
        self.buffer, self.words, self.call = buffer, words, call
        self.sets = [shared_memory.unpack(buffer, specs) for specs in where["sets"]]
        self.regions = [buffer.view(region["at"], torch.uint8, [region["nbytes"]], [1], 0)
                        for region in where["regions"]]
        self.stream = torch.cuda.Stream()
        self.graph = None
        self.specs: list = []

    def _runs(self, capturing: bool = False) -> list:
        """Runs the candidate once per input set, each in its region; returns the specs."""
        specs = []
        for inputs, region in zip(self.sets, self.regions):
            arena = Arena(region)
            outputs = self.call(inputs, arena, capturing)
            specs.append(arena.place(outputs, inputs) if outputs is not None else None)
        return specs

    def stage(self) -> dict:
        """`warm_up`, then `capture`."""
        self.warm_up()
        return self.capture()

    def warm_up(self, warmup_runs: int = 2) -> None:
        """Runs the candidate on the staging values (a first launch loads a module, which
        synchronizes the context: behind `go`, it would wait for ever)."""
        with timing.phase("warmup"), torch.cuda.stream(self.stream):
            for _ in range(warmup_runs):
                self.call(self.sets[0], None, False)
            self.stream.synchronize()
        # what `torch.cuda.graph` frees before a capture, freed here, in the warm-up's hold:
        # freeing device memory unmaps it, and a timing run beside an unmap runs slow
        torch.cuda.synchronize()
        torch.cuda.empty_cache()

    def capture(self, warm: bool = False) -> dict:
        """Captures the runs in a graph: recorded, none launched (host work, the most of a
        case's staging: RESULTS.md#capture-hold), with none of `torch.cuda.graph`'s freeing
        (done in `warm_up`); a candidate that cannot be captured runs eagerly when armed.
        `warm`: the graph is launched once here, on what the lent sets hold (`clock.WARM`)."""
        try:
            graph = torch.cuda.CUDAGraph()
            with timing.phase("capture"), torch.cuda.stream(self.stream):
                with timing.phase("begin"):
                    graph.capture_begin(capture_error_mode="global")
                try:
                    with timing.phase("runs"):  # the candidate's host code, the op audit's
                        self.specs = self._runs(capturing=True)
                finally:  # capture mode ends, failed or not (the invalidated one raises here)
                    with timing.phase("instantiate"):
                        graph.capture_end()
            self.graph = graph
        except Exception:  # capture is an optimisation; eager runs are timed the same way
            torch.cuda.synchronize()
            self.graph, self.specs = None, []
        if warm and self.graph is not None:  # a fault here is the candidate's, not the capture's
            with timing.phase("replay"), torch.cuda.stream(self.stream):
                self.graph.replay()
                self.stream.synchronize()
        return {"method": "graph" if self.graph is not None else "eager"}

    def arm(self, go: int, wake: str = "front") -> list:
        """Enqueues wait(go) -> the runs -> write(done) on this case's stream, both words in
        the judge's host page; returns the runs' output specs. Host code that synchronizes
        blocks here until the judge lets go. `wake` (`fitness.judge.clock.WAKE`): "front",
        the stream waits in the GPU's front end; "spin", a kernel spins on `go`."""
        from fitness.processes import stream_sync

        handle = self.stream.cuda_stream
        wait = stream_sync.spin_until if wake == "spin" else stream_sync.wait_value
        wait(handle, self.words.address("go"), go)
        with torch.cuda.stream(self.stream):
            if self.graph is not None:
                self.graph.replay()
                specs = self.specs
            else:
                specs = self._runs()
        stream_sync.write_value(handle, self.words.address("done"), go)
        return specs
