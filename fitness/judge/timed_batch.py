"""The judge's side of a timed batch: inputs made fresh for every batch, outputs read into the
judge's memory, and on a GPU the judge's clock (docs/design.md, "The timed batch").

One `TimedBatch` per timed case, in the checker. Every batch draws N new seeds from the
operating system's RNG, makes N input sets from them in this process's private memory (the
seeds never leave it), and only then puts the values where the worker reads them: on a GPU
into a buffer lent to the worker, right before the judge's clock starts; elsewhere as raw
files in the worker's input directory, after the engine has read the worker's CPU time.
The outputs of `CHECKED_RUNS` runs, drawn once the worker has committed to the batch, are
compared with the reference on those runs' private inputs, and their lent inputs must be
unchanged.
"""

from __future__ import annotations

import os
import random
import time

import torch

from fitness.judge import checking, fenced
from fitness.measure import timing
from fitness.processes import host_words, protocol, shared_memory, stream_sync

BATCH_BYTES = 2 << 30
"""The most bytes a case's lent buffer holds (inputs and regions of every run): it caps the
runs of a case with large inputs or outputs, and so the fill's one copy, which must end in one
time slice of the checker's context beside a worker kernel spinning on `go` (about 2.4 ms on
the GPU measured, RESULTS.md §28; 4 GiB of inputs would take about 1.8 ms to copy). A run
that alone is past it is a batch of one (checked, as every run of a batch that small): two
runs of an 8-GB input, with the mirror and the snapshot's copies, asked a checker for 112 GB,
most of a GPU's memory (evidence: RESULTS.md#huge-case-memory)."""
REGION_SLACK_BYTES = 1 << 20
"""What a run's region holds beyond twice its outputs: the temporaries a wrapper allocates."""
CHECKED_RUNS = 4
"""Runs of each batch whose outputs are compared with the reference and whose inputs are
checked unchanged, drawn once the worker has committed to the batch (on a GPU: armed it; on
the interpreter: answered it). A candidate that skips the work in a
fraction p of its runs is caught with probability 1 - (1 - p)^(4 x batches x cases): a run in
20 skipped (5% faster) goes unseen over 5 batches of 4 cases 1.6% of the time."""
CHECKED_ELEMENTS = 1 << 20
"""Elements of each output of a checked run compared with the reference, drawn at random
after the runs (outputs no larger are compared whole). The comparison ran in the device
hold, about 20 ms a batch in fp64 over whole outputs (RESULTS.md#sampled-check). A run that
skips a fraction f of its elements goes unseen with probability (1 - f)^(2^20) per output:
e^-10 at f = 1e-5, which would make it 0.001% faster."""
HOT_S = 0.05
"""How long the checker reads `done` without pause; past it, every `_POLL_S` (a batch that long
is a slow candidate's, and 0.2 ms on it is noise)."""
POISON_BYTES = range(0xF0, 0xFF)
"""The bytes a region is poisoned with: repeated, each reads as NaN, an infinity or a negative
of magnitude 10,112 or more in every float dtype (float16's least), so an output left unwritten
fails whatever the reference; 0x80-0xBF, drawn before, read as negatives down to 1e-38 in
float32, which pass beside a reference of zeros."""
FILL_SLACK = 2.0
FILL_FLOOR_MS = 0.1
"""A fill's burst is cut (`burst_cut`) past FILL_SLACK x the case's quickest +
FILL_FLOOR_MS: a time slice of another context lasts milliseconds, its own copies' spread a
few percent (RESULTS.md#fill-exposure)."""
TURN_ALLOWANCE_US = 40.0
"""What of the judge's wait for its stream's turn on the GPU after reading `done` a batch's
latency does not count (`TimedBatch._turn`): the least an idle worker's context took to hand
the GPU over (44-253 us, RESULTS.md#late-turn). The rest counts: a worker that says `done`
early, from a stream of its own, while a kernel of its own still does the runs holds the GPU
until that kernel ends (or its time slice: milliseconds, RESULTS.md#fill-exposure), and
hides at most this less its own hand-over. An honest batch pays its hand-over past it, as
the baseline's does. It applies with `clock.TURN` "done" only, and there such a worker hid
the whole hand-over on a GPU (RESULTS.md §32)."""
FILL_TRIES = 3
"""Fills a batch may draw before one is whole; past them its worker is failed as
`cheat_background_work`: a worker's own batch leaves the GPU idle while it waits for `go`."""
QUIET_US = 300.0
QUIET_PROBES = 3
"""The device is quiet for a case's batches (`quiet_device`) once this many probes in a row
each took less than QUIET_US: a one-element kernel on the checker's stream, launched and
waited for, takes about 20 us on a quiet GPU and waits out another context's turn, about
2.4 ms, beside one with work queued (RESULTS.md §28's time slice). The wait's limit is the
request's (`clock.DEVICE_QUIET_S`)."""
_DRAW = random.SystemRandom()
_POLL_S = 0.0002


def quiet_device(probe_us, limit_s: float, clock=time.monotonic) -> dict:
    """Probes (`probe_us`: one probe's microseconds) until `QUIET_PROBES` in a row read
    under `QUIET_US`, or `limit_s` has passed. Returns {"quiet": whether they did, "probes":
    how many ran, "waited_ms": from the first to the last}. Each probe that waits out a turn
    is itself the pause: no sleep between them."""
    began, probes, in_a_row = clock(), 0, 0
    while in_a_row < QUIET_PROBES:
        if probes and clock() - began > limit_s:
            break
        probes += 1
        in_a_row = in_a_row + 1 if probe_us() < QUIET_US else 0
    return {"quiet": in_a_row >= QUIET_PROBES, "probes": probes,
            "waited_ms": round((clock() - began) * 1e3, 3)}


class FillCut(RuntimeError):
    """Every fill of a batch was cut by another context's turn on the GPU (`TimedBatch.release`)."""


class TimedBatch:
    """A timed case's batches on the judge's side: `runs` input sets and output regions.

    Each run's region (what it may allocate in the lent buffer, outputs and temporaries:
    `fitness.sandbox.timed.Arena`) holds twice the reference's outputs and some slack. With
    `share` the regions and inputs live in one buffer lent to the worker; otherwise files
    carry both ways. `runs` is capped so the buffer stays within `BATCH_BYTES`.
    """

    def __init__(self, task, params: dict, runs: int, device, share: bool,
                 input_dir: str | None):
        self.task, self.params, self.device = task, params, device
        self.input_dir = input_dir
        with timing.phase("make"):
            staging = task.make_inputs(params, _DRAW.getrandbits(62), device.torch_device)
        self.layout = protocol.layouts(staging)
        self.buffer = None
        self.fresh: dict[int, list] = {}  # the current batch's private inputs, by run
        self.checked: list[int] = []  # the runs of the current batch the judge compares
        self.snapshot: dict = {}  # GPU: per checked run, its region as the clock stopped
        self.lent_after: dict = {}  # GPU: per checked run, its lent inputs as the clock stopped
        self.region_copies: list = []  # GPU: where `take_snapshot` copies, one per checked run
        self.input_copies: list[list] = []
        self.files: list[list[dict]] = []  # interpreter: the current batch's input specs
        self.runs = runs
        if not share:
            return
        tensors = [v for v in staging if isinstance(v, torch.Tensor)]
        spans = [protocol.extent(t.shape, t.stride(), t.storage_offset()) * t.element_size()
                 for t in tensors]
        with timing.phase("reference"):
            expected = fenced.reference_outputs(task, staging)
        region_bytes = 2 * sum(t.numel() * t.element_size() for t in expected) + REGION_SLACK_BYTES
        region_bytes = -(-region_bytes // shared_memory.ALIGN_BYTES) * shared_memory.ALIGN_BYTES
        self.runs = runs = max(1, min(runs, BATCH_BYTES // (sum(spans) + region_bytes)))
        offsets, total = shared_memory.layout(spans * runs + [region_bytes] * runs)
        with timing.phase("allocate"):
            self.buffer = shared_memory.allocator(torch.cuda.current_device())(total)
        per_run = len(tensors)
        self.sets = []  # per run: the input specs, as `shared_memory.unpack` reads them
        for run in range(runs):
            at = iter(offsets[run * per_run:(run + 1) * per_run])
            self.sets.append([{"at": next(at), **spec} if "dtype" in spec else spec
                              for spec in self.layout])
        self.regions = [{"at": at, "nbytes": region_bytes} for at in offsets[runs * per_run:]]
        # the lent sets lie first, back to back: one copy from a private mirror of them fills
        # every run at once (`_burst`); the mirror is made at the first fill, in the device
        # hold, so that a case waiting for the hold holds no more memory than its lent buffer
        self.inputs_bytes = offsets[runs * per_run]
        self.mirror = self.lent_inputs = self.flush = None
        self.mirror_sets: list[list] = []
        self.words = host_words.HostWords.create()
        self.turn = host_words.HostWords.create(host_words.TURN).register()
        self.stream = torch.cuda.Stream()
        self.burst = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
        self.fill_ms: list[float] = []  # each fill's burst, by this stream's events
        self.stream.wait_stream(torch.cuda.current_stream())  # the staging values made there
        with timing.phase("stage"), torch.cuda.stream(self.stream):
            self.burst[0].record(self.stream)
            for specs in self.sets:  # valid values to warm up and capture on
                for view, value in zip(shared_memory.unpack(self.buffer, specs), staging):
                    if isinstance(view, torch.Tensor):
                        view.copy_(value)
            self.burst[1].record(self.stream)
            self.poison()
            torch.cuda.synchronize()
        # No fill's yardstick: set by set, and the same copy as a fill's read 1-2.5 ms more in
        # every fill of a case, with the worker armed behind `go` (RESULTS.md#one-copy-fill)
        self.staging_ms = self.burst[0].elapsed_time(self.burst[1])

    def share(self) -> dict:
        """Returns the lent buffer's layout for the worker (its descriptor goes separately)."""
        return {"size": self.buffer.size, "sets": self.sets, "regions": self.regions}

    def _make_inputs(self) -> list:
        """Returns one run's new inputs, from a seed drawn here, in private memory."""
        return self.task.make_inputs(self.params, _DRAW.getrandbits(62), self.device.torch_device)

    def write_files(self, prefix: str) -> list[list[dict]]:
        """Interpreter: makes the batch's inputs and writes them as raw files into the worker's
        input directory; returns their specs, one list per run."""
        self._remove_files()
        self.fresh = {run: self._make_inputs() for run in range(self.runs)}
        self.files = [protocol.write_values(self.input_dir, f"{prefix}r{run}", inputs)
                      for run, inputs in self.fresh.items()]
        return self.files

    def poison(self) -> None:
        """GPU: fills every region with a byte drawn now from `POISON_BYTES`, on this
        process's stream: output a run leaves unwritten fails. Done
        once at the start and when each batch is over, so a batch's own path to the clock
        holds only its inputs (moving it there from right before the fill left the judge's
        latency as it was: RESULTS.md §20b)."""
        poison = _DRAW.choice(POISON_BYTES)
        with torch.cuda.stream(self.stream):
            for region in self.regions:
                self.buffer.view(region["at"], torch.uint8, [region["nbytes"]], [1], 0).fill_(poison)

    def fill(self) -> None:
        """GPU: draws the runs to check, makes every run's inputs (values no worker has seen)
        in this process's private mirror of the lent sets, then copies the mirror into them
        in one copy between two of this stream's events (`release`'s first part). The drawn
        runs' private inputs are the mirror's, until the next fill.

        Drawing and copying one run after another took 8-33 ms a batch, with host gaps
        between launches in which a kernel the worker left running gets the GPU and reads
        each set as soon as it is complete (RESULTS.md#fill-exposure). A burst of one copy
        per set still had them where the copies were short: the host enqueued them slower
        than the device ran them, and the events timed the host (RESULTS.md#one-copy-fill).
        One copy has no gap, and `_fill_cut` tells one that another context's turn cut."""
        self.checked = sorted(_DRAW.sample(range(self.runs), min(self.runs, CHECKED_RUNS)))
        kept = {}
        with torch.cuda.stream(self.stream):
            if self.mirror is None:
                self._make_mirror()
            for run in range(self.runs):
                made = self._make_inputs()
                for view, value in zip(self.mirror_sets[run], made):
                    if isinstance(view, torch.Tensor):
                        view.copy_(value)
                if run in self.checked:
                    kept[run] = [view if isinstance(view, torch.Tensor) else value
                                 for view, value in zip(self.mirror_sets[run], made)]
        # the mirror made before the burst is queued: behind a worker kernel spinning on
        # `go` (`clock.WAKE` "spin") the burst then starts a time slice of this context's
        # own, instead of running into the end of the one the making began in
        self.stream.synchronize()
        self._burst()
        self.fresh = kept

    def _make_mirror(self) -> None:
        """Makes the private mirror of the lent sets and its views, the buffer that flushes
        the last-level cache, and the snapshot's copies, on the current stream.

        The copies are made here, before any batch, and not as the snapshot is taken: that
        is queued behind the stream's wait for `done` (`_queue_turn`), and an allocation the
        caching allocator could not serve from its cache synchronized with that stream to
        free its blocks, before `go` was stored: the judge waited on itself until the
        request's limit (evidence: RESULTS.md#snapshot-behind-the-wait)."""
        device = self.device.torch_device
        self.mirror = torch.empty(self.inputs_bytes, dtype=torch.uint8, device=device)
        self.flush = torch.empty(timing.flush_bytes(self.device), dtype=torch.int8, device=device)
        self.mirror_sets = [shared_memory.unpack(self.mirror, specs) for specs in self.sets]
        self.lent_inputs = self.buffer.view(0, torch.uint8, [self.inputs_bytes], [1], 0)
        checked = min(self.runs, CHECKED_RUNS)
        self.region_copies = [torch.empty(self.regions[0]["nbytes"], dtype=torch.uint8,
                                          device=device) for _ in range(checked)]
        self.input_copies = [[torch.empty_like(view) if isinstance(view, torch.Tensor) else None
                              for view in self.mirror_sets[0]] for _ in range(checked)]

    def _burst(self) -> None:
        """Copies the mirror into the lent sets, one copy on this process's stream, then
        flushes the last-level cache, between the two `burst` events: every run reads its
        inputs from memory, as event timing's runs do behind its flush (the sets last copied
        stayed in the cache, and the judge read 0.94x events at the median, RESULTS.md §33);
        the flush inside the burst, so that a cut in it is seen as one in the copy."""
        with torch.cuda.stream(self.stream):
            self.burst[0].record(self.stream)
            self.lent_inputs.copy_(self.mirror)
            self.flush.zero_()
            self.burst[1].record(self.stream)

    def _fill_cut(self) -> bool:
        """GPU, the fill waited for: whether its burst was cut (`burst_cut`), against every
        fill of this case before it (the first is measured, never cut)."""
        took_ms = self.burst[0].elapsed_time(self.burst[1])
        cut = burst_cut(took_ms, self.fill_ms)
        self.fill_ms.append(took_ms)
        return cut

    def take_snapshot(self):
        """GPU: enqueues a copy of the drawn runs' regions, then of their lent inputs, on the
        current stream (`release`'s last part), yielding after each copy: what the judge
        compares is what the runs left at the end of the clock, whatever the worker does
        after. The regions go first, in the turn that stops the clock. It copies into the
        copies `_make_mirror` made: nothing is allocated behind the wait for `done`."""
        self.snapshot, self.lent_after = {}, {}
        for run, copy in zip(self.checked, self.region_copies):
            self.snapshot[run] = copy.copy_(self.buffer.view(
                self.regions[run]["at"], torch.uint8, [self.regions[run]["nbytes"]], [1], 0))
            yield
        for run, copies in zip(self.checked, self.input_copies):
            self.lent_after[run] = []
            for view, copy in zip(shared_memory.unpack(self.buffer, self.sets[run]), copies):
                self.lent_after[run].append(copy.copy_(view) if isinstance(view, torch.Tensor) else view)
                yield

    def release(self, go: int, limit_s: float, cut_fails: bool = True,
                turn: str = "done") -> float:
        """GPU: `fill` and wait for it; then the judge's clock: this process's monotonic clock
        from storing `go` in the host words to reading `turn` written by this stream, queued
        before `go` behind its wait for `done` (`turn` "go", `_queue_turn`), or to reading
        `done` plus the wait past `TURN_ALLOWANCE_US` for this stream's next turn (`turn`
        "done", `_turn`); the snapshot rides with the turn, and `poison` follows. Returns the
        clock's microseconds; raises TimeoutError past `limit_s`.

        The clock starts as the inputs are complete (the fill waited for): a worker that
        reads them early, from a kernel left running on another stream, does so on the
        clock, but for the microseconds this process takes to wake from the wait. A fill
        another context's turn cut (`_fill_cut`) is drawn
        again, `FILL_TRIES` fills at most; past them raises FillCut, unless not `cut_fails`
        (a baseline's worker, which runs trusted code: the cuts were a neighbour's, and the
        last fill is timed). `turn`: `clock.TURN`."""
        for _ in range(FILL_TRIES):
            with timing.phase("fill"):
                self.fill()
                self.stream.synchronize()
            if not self._fill_cut() or not cut_fails:
                break
        else:
            took = ", ".join(f"{ms:.2f}" for ms in self.fill_ms[-FILL_TRIES:])
            raise FillCut(f"another context had the GPU in the middle of each of {FILL_TRIES} "
                          f"fills of the judge's inputs ({took} ms, against {min(self.fill_ms):.2f} "
                          "ms at the quickest): device work the worker left running could read "
                          "the inputs before the clock starts")
        if turn == "go":
            self._queue_turn(go)
        began = time.perf_counter_ns()
        self.words.store("go", go)
        deadline = time.monotonic() + limit_s
        try:
            done = (self._await(self.words, "done", go, deadline) if turn == "done"
                    else self._await(self.turn, "turn", go, deadline))
        except TimeoutError:
            if turn == "go":  # frees the queued turn's wait: the snapshot can run
                self.words.store("done", go)
            raise TimeoutError(f"the worker did not finish its batch of {self.runs} runs "
                               f"within {limit_s:g} s") from None
        late_us = (self._turn(go, deadline) - done) / 1e3 if turn == "done" else 0.0
        timing.SPENT_S["turn"] += late_us * 1e-6  # the meter's, and judge_clock_bisect's
        with timing.phase("snapshot"):
            self.poison()
            self.stream.synchronize()
        return (done - began) / 1e3 + turn_charged_us(late_us)

    def quiet(self, limit_s: float) -> dict:
        """GPU: waits for other contexts' queued work to end before a case's first batch
        (`quiet_device`, probing with a one-element kernel on this stream): the holders a
        candidate's hold stopped launch nothing more, but what they queued still runs, and a
        batch beside it waits out a turn of theirs in its clock."""
        with torch.cuda.stream(self.stream):
            tick = torch.zeros(1, device=self.device.torch_device)
        self.stream.synchronize()

        def probe_us() -> float:
            began = time.perf_counter_ns()
            with torch.cuda.stream(self.stream):
                tick.add_(1)
            self.stream.synchronize()
            return (time.perf_counter_ns() - began) / 1e3

        return quiet_device(probe_us, limit_s)

    def fill_gbps(self) -> float:
        """GPU: the last fill's copy of the inputs, in GB/s by this stream's events (its
        flush included): low in every batch of a case where another context had the GPU in
        time slices throughout. For the meter's log of timed cases, never a verdict."""
        return self.inputs_bytes / max(self.fill_ms[-1], 1e-6) / 1e6

    @staticmethod
    def _await(words, name: str, go: int, deadline: float) -> int:
        """Returns the `perf_counter_ns` at which word `name` of `words` was first read
        holding `go`: read without pause for `HOT_S`, then every `_POLL_S`."""
        hot_until = time.monotonic() + HOT_S
        while words.load(name) != go:
            now = time.monotonic()
            if now > deadline:
                raise TimeoutError(name)
            if now > hot_until:
                time.sleep(_POLL_S)
        return time.perf_counter_ns()

    def _queue_turn(self, go: int) -> None:
        """GPU, before `go`: enqueues on this process's stream a wait for `done` to hold `go`,
        then the write of `go` to the `turn` word, then the snapshot, so that the judge's
        turn is queued for every batch alike. Queued only once `done` is read (`_turn`), a
        `done` said early from a stream of the worker's own while its kernels still did the
        runs put the judge's turn in the queue early, where the GPU switched to it as they
        ended, sooner than to a turn enqueued after an honest `done`: 10-15% of vector_add's
        latency (RESULTS.md §32). Here the turn waits on the device, queued
        the same way whenever `done` is said: said early, the judge's next time slice stops
        the clock and snapshots runs not yet written (c05_finishes judged wrong on a GPU,
        RESULTS.md §33). The wait pending in this context cost about 130 us a batch in
        context switches beside a worker woken by the GPU's front end
        (RESULTS.md#host-clock); beside one spinning on `go` (`clock.WAKE`) the judge read
        0.966x events at the median."""
        if self.words.device is None:
            self.words.register()
        with torch.cuda.stream(self.stream):
            stream_sync.wait_value(self.stream.cuda_stream, self.words.address("done"), go)
            stream_sync.write_value(self.stream.cuda_stream, self.turn.address("turn"), go)
            for _ in self.take_snapshot():
                pass

    def _turn(self, go: int, deadline: float) -> int:
        """GPU, `done` read: enqueues on this process's stream a write of `go` to its own
        `turn` word, then the snapshot, and returns the `perf_counter_ns` at which the word
        was first seen written (read after the write's enqueue and after each copy's).

        A worker can write `done` early (from its host, or from a stream of its own) while a
        kernel of its own still does the runs. Contexts time-slice the GPU, so this stream's
        first work after `done` runs once that kernel has ended or its slice has
        (milliseconds, RESULTS.md#fill-exposure): work that ended before is counted past
        `TURN_ALLOWANCE_US` (`release`); work cut by the slice meets the snapshot, enqueued
        behind the word in the same turn, and its outputs are the poison. An idle worker's
        context hands over in 44-253 us, past the allowance on the clock for the baseline
        too (RESULTS.md#late-turn)."""
        ended = None

        def seen() -> None:
            nonlocal ended
            if ended is None and self.turn.load("turn") == go:
                ended = time.perf_counter_ns()

        with torch.cuda.stream(self.stream):
            stream_sync.write_value(self.stream.cuda_stream, self.turn.address("turn"), go)
            seen()
            for _ in self.take_snapshot():
                seen()
        while ended is None:
            seen()
            if ended is None and time.monotonic() > deadline:
                raise TimeoutError("the judge's stream had no turn on the GPU after the "
                                   "worker's `done`")
        return ended

    def judge(self, outputs: list, output_dir: str | None) -> dict:
        """`_judged`, then the worker's output files go."""
        try:
            return self._judged(outputs, output_dir)
        finally:
            for specs in outputs if self.buffer is None and isinstance(outputs, list) else []:
                remove_files(output_dir, specs)

    def _judged(self, outputs: list, output_dir: str | None) -> dict:
        """Compares the outputs of the `CHECKED_RUNS` drawn runs (drawn now on the
        interpreter; specs from the worker: offsets in its region's snapshot, or raw files)
        with the reference on that run's private inputs, and on a GPU its lent inputs as the
        clock stopped with its private ones; returns the first failing run's verdict, or a
        pass."""
        if not (isinstance(outputs, list) and len(outputs) == self.runs):
            return {"kind": "wrong_type", "detail": f"the worker reported outputs for "
                    f"{str(outputs)[:60]} of a batch of {self.runs} runs"}
        worst = {"max_abs_err": 0.0, "rel_err": 0.0}
        if self.buffer is None:
            self.checked = sorted(_DRAW.sample(range(self.runs), min(self.runs, CHECKED_RUNS)))
        for run in self.checked:
            specs, inputs = outputs[run], self.fresh[run]
            try:
                actual = self._outputs(run, specs, output_dir)
            except (protocol.ProtocolError, shared_memory.SharedMemoryError) as error:
                return {"kind": "wrong_type", "detail": f"run {run}: unreadable outputs: {error}"}
            with timing.phase("reference"):
                expected = fenced.reference_outputs(self.task, inputs)
            if self.task.unwritten_free:
                actual = checking.unwritten_freed(expected, actual)
            verdict = checking.compare_outputs(expected, actual, self.task.tolerance,
                                               CHECKED_ELEMENTS)
            if verdict["kind"] is not None:
                return {**verdict, "detail": f"timed run {run}: {verdict.get('detail', '')}"}
            worst = {key: max(worst[key], verdict.get(key) or 0.0) for key in worst}
        for run in self.checked if self.buffer is not None else []:
            if not self._inputs_unchanged(run):
                return {"kind": "inputs_modified", "detail": f"timed run {run} modified its "
                        "inputs in place; inputs must be left unchanged"}
        return {"kind": None, "detail": "", **worst}

    def _outputs(self, run: int, specs, output_dir: str | None) -> list:
        if not isinstance(specs, list):
            raise protocol.ProtocolError(f"expected a list of output specs, got {specs!r:.100}")
        if self.buffer is None:
            return protocol.read_values(output_dir, specs, "cpu")
        return placed_outputs(self.snapshot[run], self.lent_after[run], specs)

    def _inputs_unchanged(self, run: int) -> bool:
        return all(checking.bitwise_equal(after, value)
                   for at, (after, value) in enumerate(zip(self.lent_after[run], self.fresh[run]))
                   if isinstance(after, torch.Tensor) and at not in self.task.written)

    def close(self) -> None:
        """Frees the lent buffer, the host words and any input files left."""
        if self.buffer is not None:
            with timing.phase("free"):
                self.buffer.release()
                self.buffer = self.mirror = self.lent_inputs = self.flush = None
                self.mirror_sets, self.region_copies, self.input_copies = [], [], []
                self.words.release()
                self.turn.release()
        self._remove_files()
        self.fresh = {}

    def _remove_files(self) -> None:
        for specs in self.files:
            remove_files(self.input_dir, specs)
        self.files = []


def burst_cut(took_ms: float, earlier_ms: list[float]) -> bool:
    """Whether a fill's burst that took `took_ms` was cut: past `FILL_SLACK` times the
    quickest of the case's `earlier_ms` plus `FILL_FLOOR_MS`, another context had the GPU in
    the middle of it, and whatever ran there could read the sets already copied. A worker
    can slow the quickest, never hasten it, so the bound holds against one that keeps the
    GPU busy."""
    return bool(earlier_ms) and took_ms > FILL_SLACK * min(earlier_ms) + FILL_FLOOR_MS


def turn_charged_us(waited_us: float) -> float:
    """The part of the judge's wait for its stream's turn after `done` that a batch's latency
    counts: past `TURN_ALLOWANCE_US`, the worker's context held the GPU after saying it was
    done, with work of its own (`TimedBatch._turn`)."""
    return max(0.0, waited_us - TURN_ALLOWANCE_US)


def remove_files(directory: str | None, specs) -> None:
    """Removes the raw files `specs` name in `directory` (names validated: they may come
    from the worker)."""
    for spec in specs if isinstance(specs, list) else []:
        name = spec.get("file") if isinstance(spec, dict) else None
        if directory and isinstance(name, str) and "/" not in name and not name.startswith("."):
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                pass


def placed_outputs(region: torch.Tensor, lent: list, specs: list) -> list[torch.Tensor]:
    """Returns a run's outputs as `specs` place them (`fitness.sandbox.timed.Arena.place`):
    in its region's snapshot (`region_outputs`), or {"input": at}, its lent input at `at`
    as the clock stopped (`lent`: the judge's snapshot of them), where the run wrote it in
    place. Raises ProtocolError for a spec that names no lent tensor."""
    values = []
    for spec in specs:
        if isinstance(spec, dict) and "input" in spec:
            at = spec["input"]
            if not (type(at) is int and 0 <= at < len(lent) and isinstance(lent[at], torch.Tensor)):
                raise protocol.ProtocolError(f"an output names lent input {at!r:.40}, which "
                                             f"is not one of the run's {len(lent)} tensors")
            values.append(lent[at])
        else:
            values += region_outputs(region, [spec])
    return values


def region_outputs(region: torch.Tensor, specs: list) -> list[torch.Tensor]:
    """Returns the outputs `specs` place in `region` (a run's uint8 snapshot): each spec's
    `at` is a byte offset into it, its `offset` elements past that; raises ProtocolError
    for a spec that is malformed or reaches outside."""
    values = []
    for spec in specs:
        if not isinstance(spec, dict) or not isinstance(spec.get("at"), int):
            raise protocol.ProtocolError(f"malformed output spec {spec!r:.200}")
        dtype, shape, stride, offset = protocol.tensor_layout(spec)
        at, span = spec["at"], protocol.extent(shape, stride, offset) * dtype.itemsize
        if at < 0 or at % dtype.itemsize or at + span > region.numel():
            raise protocol.ProtocolError(f"an output reaches outside its run's region of "
                                         f"{region.numel()} bytes")
        # as_strided counts its offset from the start of the storage, not of the slice: an
        # output past the region's first allocation was read from its head (cross_entropy's
        # mean, behind its per-row losses, read as the first row's loss)
        placed = region[at:].view(dtype)
        values.append(torch.as_strided(placed, shape, stride, placed.storage_offset() + offset))
    return values
