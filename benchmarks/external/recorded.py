"""External suites' performance inputs as judge-made inputs (docs/design.md, "External
suites on the judge's clock"): what the suites' recorders share, and TritonBench-revised's
timing calls, recorded (KernelBench's: `kernelbench_models`; ROCm's: `rocm_launches`).

A performance file makes its inputs and calls the kernel module in one piece. In a checker
(trusted: it runs the suite's code and the reference module, never a candidate's)
`PerformanceCalls` runs that code with the reference module's functions replaced by
recorders, so `call_op`'s call of the module is caught with its arguments. That gives a
built-in-shaped task: `make_inputs` reruns the timing code for one input, its seeds salted
by the judge's draw; the reference is the recorded function; the outputs are what it
returns plus the arguments it writes (an `out`). Timing code that cannot be recorded so
raises `Unrecordable`, and the task is left untimed with that reason.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib.util
import inspect
import os
import random
import sys
import tempfile
import types

LOADED: dict[tuple, object] = {}
"""What each recorder imported in this process (modules, a definition, a model), by a key of
its own: imported once per checker, whatever the number of calls."""


class Unrecordable(RuntimeError):
    """A suite's timing code cannot be recorded as judge-made inputs; says why."""


class InputFault(RuntimeError):
    """The reference's own run raised on performance input `at` (`error`, not running out of
    memory): GEAK-eval's timing loop fails that input and goes on, and where the error is a
    device fault every later input of the process fails with it, so the inputs before `at`
    are the ones both can time."""

    def __init__(self, at: int, error: BaseException):
        super().__init__(f"the reference failed on performance input {at}: "
                         f"{type(error).__name__}: {error}")
        self.at, self.error = at, error


class Recorded(BaseException):
    """Raised by a recorder at the module's first call: its name and arguments."""

    def __init__(self, name: str, args: tuple, kwargs: dict):
        super().__init__(name)
        self.name, self.args_seen, self.kwargs = name, args, kwargs


class _Enough(BaseException):
    """Raised when the input asked for has been made: the rest are not needed."""


class _Upto(list):
    """The definition's `input_tensors` while inputs are made: full after `count` items;
    with `last_only`, an item is dropped (None in its place) once the next one is made, so
    that making input k holds one input at a time on the device, not k + 1 (a task's
    inputs come to 4.8 GB at most: RESULTS.md §24). `deferred`: the inputs before the last
    are made on the meta device (`_deferred_mode`), and it is told when they are all in."""

    def __init__(self, items, count: int | None, last_only: bool, deferred=None):
        super().__init__(items)
        self.count, self.last_only, self.deferred = count, last_only, deferred

    def append(self, item) -> None:
        super().append(item)
        if self.last_only and len(self) > 1:
            self[-2] = None
        if self.deferred is not None and len(self) == self.count - 1:
            self.deferred.active = False  # the next one is the input asked for: made for real
        if self.count is not None and len(self) >= self.count:
            raise _Enough


_FACTORIES = ("rand", "randn", "randint", "randperm", "zeros", "ones", "empty", "full",
              "arange", "linspace", "logspace", "eye", "tensor", "empty_strided", "normal")
"""The torch functions that make a tensor on the default device or a named one: while the
inputs before the one asked for are made (`_deferred_mode`), on the meta device."""


def _deferred_mode():
    """Returns a TorchFunctionMode that, while its `active`, makes tensors on the meta device
    (shapes and dtypes, no values, no memory, no kernel) and keeps `.cuda()`/`.to()` of a
    meta tensor on it. Input k of a performance file is made by running its loop from
    input 0: every timed run's fresh inputs of a suite's largest case made every smaller
    case's first, on the device, inside the judge's hold. An input asked for that reads
    such a tensor holds one (`_meta_free`), and is then made the whole way instead."""
    import torch
    from torch.overrides import TorchFunctionMode

    factories = {getattr(torch, name) for name in _FACTORIES}
    moves = {torch.Tensor.cuda, torch.Tensor.to}

    class Deferred(TorchFunctionMode):
        active = True

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if self.active and func in factories:
                kwargs["device"] = "meta"
            elif self.active and func in moves and args and getattr(args[0], "is_meta", False):
                dtype = kwargs.get("dtype") or next((a for a in args[1:] if isinstance(a, torch.dtype)), None)
                return args[0] if dtype is None else args[0].to(dtype=dtype)
            return func(*args, **kwargs)

    return Deferred()


def _meta_free(value) -> bool:
    """Whether `value` (an input as the timing code made it) holds no meta tensor."""
    import torch
    from torch.utils._pytree import tree_leaves

    return not any(isinstance(leaf, torch.Tensor) and leaf.is_meta for leaf in tree_leaves(value))


@functools.lru_cache(maxsize=None)
def _stopping(definition_class: type) -> type:
    """Returns a subclass of a performance definition whose `input_tensors`, however the
    timing code assigns it, is an `_Upto` of the instance's `_count` and `_last_only` (made
    once per class: `make_inputs` runs for every timed run)."""
    return type("Recording", (definition_class,), {"input_tensors": property(
        lambda self: self.__dict__["_inputs"],
        lambda self, items: self.__dict__.__setitem__(
            "_inputs", _Upto(items, self.__dict__["_count"], self.__dict__["_last_only"],
                             self.__dict__.get("_deferred"))))})


PERFORMANCE_UTILS = "geak_eval.perf.performance_utils"
_PERFORMANCE_UTILS_SOURCE = '''
class Performance_Metrics:
    """The stand-in of GEAK-eval's base class, which the performance files subclass: the
    judge calls their own methods only."""

    def __init__(self, op_name, dtype=None, is_backward=False, **kwargs):
        self.op_name, self.dtype, self.kwargs = op_name, dtype, kwargs
        self.input_tensors = []

    def get_do_bench_config(self, warmup=None, rep=None):
        pass


def do_bench_config(warm_up=25, repetition=100, **_):
    return None
'''
"""The module TritonBench-revised's performance files import from GEAK-eval, stood in: as
source, so that the checker and a worker timing call_op whole (which imports nothing of
benchmarks/) run the same one."""


class _GeakBenchmarker:
    """The stand-in of ROCm's `PytestBenchmarker`: its benchmark runs the op once."""

    def __init__(self, op_callable, op_name="", config=None, **_):
        self.op_callable = op_callable

    def run_benchmark(self, *_, **__):
        return self.op_callable()


def stand_in_geak_package() -> None:
    """Registers the modules of GEAK-eval's package the suites' timing code imports:
    `geak_eval.perf.performance_utils` (TritonBench-revised's performance files) and
    `geak_eval.perf.ROCm.performance_utils_pytest` (ROCm's `test_performance`)."""
    if "geak_eval.perf.performance_utils" in sys.modules:
        return
    for name in ("geak_eval", "geak_eval.perf", "geak_eval.perf.ROCm"):
        package = sys.modules.setdefault(name, types.ModuleType(name))
        package.__path__ = []
    utils = types.ModuleType(PERFORMANCE_UTILS)
    exec(_PERFORMANCE_UTILS_SOURCE, utils.__dict__)  # noqa: S102 (our own text)
    rocm = types.ModuleType("geak_eval.perf.ROCm.performance_utils_pytest")
    rocm.PytestBenchmarker = _GeakBenchmarker
    rocm.do_bench_config = lambda warm_up=25, repetition=100, **_: {}
    rocm.save_all_benchmark_results = lambda *_, **__: None
    for module, parent, attribute in ((utils, "geak_eval.perf", "performance_utils"),
                                      (rocm, "geak_eval.perf.ROCm", "performance_utils_pytest")):
        setattr(sys.modules[parent], attribute, module)
        sys.modules[module.__name__] = module


def import_source(source: str, name: str) -> types.ModuleType:
    """Returns `source` imported as module `name` from a file of its own (Triton reads a
    kernel's source from its file), registered in sys.modules."""
    path = os.path.join(tempfile.mkdtemp(prefix="kernelevo-suite-"), f"{name}.py")
    with open(path, "w") as handle:
        handle.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def salted_seeds(salt: int, device: str):
    """Seeds every generator from `salt`, and maps every seed the timing code sets to one
    salted by it, on `device` as the default (tensors made for "cuda" stay where they are;
    on the interpreter's CPU `.cuda()` leaves a tensor on the host)."""
    import numpy
    import torch

    def salted(set_seed):
        return lambda value=0, *rest: set_seed((int(value) * 1_000_003 + salt) % (2**31 - 1), *rest)

    owners = [(random, "seed"), (numpy.random, "seed"), (torch, "manual_seed"),
              (torch.cuda, "manual_seed"), (torch.cuda, "manual_seed_all")]
    saved = [(owner, name, getattr(owner, name)) for owner, name in owners]
    cuda = torch.Tensor.cuda
    random.seed(salt)
    numpy.random.seed(salt % (2**32))
    torch.manual_seed(salt)
    try:
        for owner, name, original in saved:
            setattr(owner, name, salted(original))
        if device == "cpu":
            torch.Tensor.cuda = lambda tensor, *_, **__: tensor
        with torch.device(device):
            yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)
        torch.Tensor.cuda = cuda


@contextlib.contextmanager
def _zeroed_empties():
    """Makes the tensors the timing code leaves uninitialised (`torch.empty` and its kin)
    zeros while it makes its inputs. Why: the judge makes them on the device
    (`salted_seeds`), where the caching allocator hands back blocks holding earlier work,
    and GEAK-eval makes them on the host of a fresh process, whose new pages are zeros. Read
    as indices (context_attn_llama's `req_to_token_indexs`, a `torch.empty((1000, N_CTX),
    dtype=torch.int32)`), recycled values ran the reference past its inputs into an illegal
    memory access (RESULTS.md §35)."""
    import torch
    from torch.overrides import TorchFunctionMode

    empties = {torch.empty, torch.empty_like, torch.empty_strided, torch.Tensor.new_empty,
               torch.Tensor.new_empty_strided}

    class Zeroed(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            made = func(*args, **(kwargs or {}))
            if func in empties and isinstance(made, torch.Tensor):
                made.zero_()
            return made

    with Zeroed():
        yield


APPLY = ".apply"
"""The suffix of a recorded entry that is an autograd Function's `apply`, called on the class
the kernel module defines (`Function.apply(x)` in call_op): the class is the entry point and
the worker calls its `apply` (`Task.entry_call` {"kind": "method"})."""


def _functions(kernel: types.ModuleType) -> dict:
    """Returns the callables of the kernel module a call_op may call, by recorded name: the
    functions it defines, methods of its classes bound at top level (`fn = Fn.apply`), and
    the `apply` of every autograd Function it defines (as "Fn.apply")."""
    import torch

    functions = {name: value for name, value in vars(kernel).items() if _entry_like(value, kernel)}
    functions.update({name + APPLY: value.apply for name, value in vars(kernel).items()
                      if inspect.isclass(value) and value.__module__ == kernel.__name__
                      and issubclass(value, torch.autograd.Function)})
    return functions


def entry_function(kernel: types.ModuleType, entry: str):
    """Returns the kernel module's callable of recorded name `entry`."""
    if entry.endswith(APPLY):
        return getattr(kernel, entry.removesuffix(APPLY)).apply
    return getattr(kernel, entry)


def _parameters(kernel: types.ModuleType, entry: str) -> inspect.Signature:
    """Returns the signature a call of `entry` binds to (an `apply`: its `forward`'s, past
    `ctx`)."""
    if not entry.endswith(APPLY):
        return inspect.signature(getattr(kernel, entry))
    forward = inspect.signature(getattr(kernel, entry.removesuffix(APPLY)).forward)
    return forward.replace(parameters=list(forward.parameters.values())[1:])


@contextlib.contextmanager
def _recording(kernel: types.ModuleType, perf: types.ModuleType, seen: list | None = None):
    """Replaces every callable of the reference module (`_functions`), there and where the
    performance module imported it, by a recorder: with `seen` None the first call raises
    `Recorded`; else every call runs, and the names of the outermost ones (not those the
    module makes of itself) are appended to `seen`."""
    functions = _functions(kernel)
    depth = [0]

    def recorder(name):
        real = functions[name]

        def record(*args, **kwargs):
            if seen is None:
                raise Recorded(name, args, kwargs)
            if depth[0] == 0:
                seen.append(name)
            depth[0] += 1
            try:
                return real(*args, **kwargs)
            finally:
                depth[0] -= 1
        return record

    by_object = {id(value): name for name, value in functions.items() if not name.endswith(APPLY)}
    patched = [(kernel, name, value) for name, value in functions.items() if not name.endswith(APPLY)]
    patched += [(perf, name, value) for name, value in vars(perf).items() if id(value) in by_object]
    classes = [getattr(kernel, name.removesuffix(APPLY)) for name in functions if name.endswith(APPLY)]
    own = {owner: owner.__dict__.get("apply") for owner in classes}  # None: inherited
    try:
        for owner, name, value in patched:
            setattr(owner, name, recorder(by_object[id(value)]))
        for owner in classes:  # the class's `apply`, where call_op names it on the class
            owner.apply = recorder(owner.__name__ + APPLY)
        yield
    finally:
        for owner, name, value in patched:
            setattr(owner, name, value)
        for owner, apply in own.items():
            if apply is None:
                del owner.apply
            else:
                owner.apply = apply


def _entry_like(value, kernel: types.ModuleType) -> bool:
    """Whether a top-level value of the kernel module is a function a caller can name: one
    it defines, or a method of a class it defines bound at top level (`fn = Fn.apply`)."""
    if inspect.isfunction(value):
        return value.__module__ == kernel.__name__
    owner = getattr(value, "__self__", None)
    return inspect.isclass(owner) and owner.__module__ == kernel.__name__ and callable(value)


def _crosses(value) -> bool:
    """Whether a non-tensor argument crosses to the worker in its spec: None, a JSON scalar,
    or a tuple or list of them (`fitness.processes.protocol.crosses_as_value`'s rule, the
    sandbox's; benchmarks import nothing of fitness)."""
    scalar = (bool, int, float, str)
    if isinstance(value, (tuple, list)):
        return all(item is None or isinstance(item, scalar) for item in value)
    return value is None or isinstance(value, scalar)


def crossing(values: list, passed: str) -> list:
    """Returns `values` when each crosses the sandbox as an argument (a tensor or a JSON
    scalar: `protocol.write_values`); else raises Unrecordable naming those that do not
    (`passed`: what passes them, "call_op passes f")."""
    import torch

    odd = [at for at, value in enumerate(values) if not (isinstance(value, torch.Tensor) or _crosses(value))]
    if odd:
        raise Unrecordable(f"{passed} argument(s) {odd} of type(s) {sorted({type(values[at]).__name__ for at in odd})}"
                           f"; only tensors and JSON scalars (or tuples of them) cross to the worker")
    return values


def same_values(first: list, again: list, skip=()) -> bool:
    """Whether two sets of arguments (one input made from two seeds) hold equal tensors at
    every position but `skip`."""
    import torch

    return all(not isinstance(a, torch.Tensor) or (a.shape == b.shape and torch.equal(a, b))
               for at, (a, b) in enumerate(zip(first, again)) if at not in skip)


def written_by(run, first: list, again: list, others=()) -> tuple[int, ...]:
    """Returns the positions of the tensor arguments the reference's call `run` writes in
    place, on `first` or on any of `others` (the other inputs' arguments, written too): a
    call that computes nothing on one input writes its output on the rest (context_attn_llama's
    smallest inputs hold a cached prompt longer than the sequence, RESULTS.md §32). Raises
    Unrecordable when what `run(first)` returns does not cross back, or when `again` (the
    same input made from another seed) equals `first` everywhere it does not write: the
    judge could not make new values."""
    before, returned, written = _run_in_place(run, first)
    for values in others:
        written |= _run_in_place(run, values)[2]
    if not written and returned is None:  # an `out`'s memory may hold what the call writes
        written = _run_in_place(run, [_scrambled(value) for value in first])[2]
    written = tuple(sorted(written))
    outputs_of(returned, first, written)
    if same_values(before, again, written):
        raise Unrecordable("the performance inputs do not change with the seed")
    return written


def _scrambled(value):
    """Returns a floating-point tensor's copy holding random values, anything else as it is:
    the recorded call on such copies changes every floating-point argument it writes. Only
    for a call that returns nothing and was seen to write nothing, which cannot be recorded
    otherwise: random values may fail another reference's host code. An `out` made with
    `empty_like` gets a block the caching allocator freed, which can hold what the call
    writes already (evidence: RESULTS.md#out-block-held-result)."""
    import torch

    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return torch.randn_like(value)
    return value


def _run_in_place(run, values: list) -> tuple[list, object, set[int]]:
    """Returns (`values` as they were, what `run(values)` returned, the positions of the
    tensors it changed)."""
    import torch

    before = [_copied(value) for value in values]
    returned = run(values)
    return before, returned, {at for at, (was, now) in enumerate(zip(before, values))
                              if isinstance(was, torch.Tensor) and not torch.equal(was, now)}


class Positional:
    """A reference whose signature is `arity` positional arguments (what the cascade asks a
    candidate's entry point to take)."""

    arity: int

    @property
    def __signature__(self) -> inspect.Signature:
        return inspect.Signature([inspect.Parameter(f"arg{i}", inspect.Parameter.POSITIONAL_ONLY)
                                  for i in range(self.arity)])


@dataclasses.dataclass(frozen=True)
class PerformanceCalls(Positional):
    """The recorded calls of one task's performance file; the task's reference (call it
    on a call's arguments) and input maker (`make_inputs`). `entry`, `arity`, `written`
    and `inputs` are filled by `record` (run in a checker) before any of that is used."""

    task: str
    kernel_stem: str
    kernel_source: str
    perf_source: str
    entry: str = ""
    arity: int = 0
    written: tuple[int, ...] = ()
    inputs: int = 0
    keywords: tuple[str, ...] = ()
    """The recorded function's keyword-only arguments call_op passes (FlagGems' generated
    wrappers: `isfinite_func_wrapper_rank_1(in0, /, *, out0)`), by name, in order: the last
    arguments are theirs, passed by keyword."""
    tree: str = ""
    """Where call_op calls the module more than once on an input: the structure of its input
    (`torch.utils._pytree.treespec_dumps`), whose leaves are the arguments, and call_op
    whole is the timed call (`entry` is then the first function it calls); "": one call."""

    @property
    def entry_point(self) -> str:
        """The name the candidate module defines: the recorded function's, or the class
        whose `apply` call_op calls."""
        return self.entry.removesuffix(APPLY)

    @property
    def entry_call(self) -> dict | None:
        """How the worker calls the entry point (`Task.entry_call`): call_op whole, from the
        performance file with the candidate module in the reference's place; a recorded
        `apply` through the class's method; a function as it is."""
        if self.tree:
            return {"kind": "call_op", "module": self.kernel_stem, "tree": self.tree,
                    "modules": {PERFORMANCE_UTILS: _PERFORMANCE_UTILS_SOURCE,
                                f"kernelevo_perf_{self.kernel_stem}": self.perf_source}}
        if self.keywords:
            return {"kind": "keywords", "names": list(self.keywords)}
        return {"kind": "method", "name": "apply"} if self.entry.endswith(APPLY) else None

    def _loaded(self) -> tuple[types.ModuleType, types.ModuleType, object]:
        """Returns (the reference module, the performance module, a performance
        definition), imported once in this process."""
        key = (self.task, self.kernel_stem, hash(self.kernel_source), hash(self.perf_source))
        if key in LOADED:
            return LOADED[key]
        owner = getattr(sys.modules.get(self.kernel_stem), "__file__", "") or ""
        if self.kernel_stem in sys.modules and not owner.startswith(tempfile.gettempdir()):
            raise Unrecordable(f"the kernel module's name {self.kernel_stem!r} is taken in the checker")
        stand_in_geak_package()
        kernel = import_source(self.kernel_source, self.kernel_stem)
        perf = import_source(self.perf_source, f"kernelevo_perf_{self.kernel_stem}")
        LOADED[key] = kernel, perf, perf.performance_metrics()
        return LOADED[key]

    def _made(self, definition, salt: int, device: str, count: int | None,
              last_only: bool = False) -> list:
        """Returns the first `count` inputs (None: all) of the timing code, seeds salted;
        with `last_only`, None in place of all but the last, those made on the meta device
        first (`_deferred_mode`), and the whole way where that fails or leaks into the last."""
        if last_only and count is not None and count > 1:
            with contextlib.suppress(Exception):
                made = self._run_maker(definition, salt, device, count, last_only, deferred=True)
                if len(made) == count and _meta_free(made[-1]):
                    return made
        return self._run_maker(definition, salt, device, count, last_only, deferred=False)

    @staticmethod
    def _run_maker(definition, salt: int, device: str, count: int | None, last_only: bool,
                   deferred: bool) -> list:
        maker = object.__new__(_stopping(type(definition)))
        mode = _deferred_mode() if deferred else None
        maker.__dict__.update(vars(definition), _count=count, _last_only=last_only, _deferred=mode)
        maker.input_tensors = []
        with salted_seeds(salt, device), _zeroed_empties(), mode or contextlib.nullcontext():
            try:
                maker.get_input_tensors()
            except _Enough:
                pass
        return list(maker.input_tensors)

    def _call(self, kernel, perf, definition, value, device: str,
              salt: int) -> tuple[str, list, tuple[str, ...]]:
        """Returns (the function name, its arguments as values, the names of its keyword-only
        ones, which come last) of the first call `call_op` makes of the reference module on
        one input (what it draws itself, an `out` filled with random values, drawn from
        `salt`)."""
        with salted_seeds(salt, device), _recording(kernel, perf):
            try:
                definition.call_op(definition.to_cuda(value))
            except Recorded as seen:
                name, args, kwargs = seen.name, seen.args_seen, seen.kwargs
            else:
                raise Unrecordable("call_op made no call of a function of the kernel module")
        try:
            bound = _parameters(kernel, name).bind(*args, **kwargs)
        except TypeError as error:
            raise Unrecordable(f"call_op's call of {name} does not bind: {error}") from None
        keywords = tuple(bound.kwargs)
        if keywords and name.endswith(APPLY):
            raise Unrecordable(f"call_op passes {name} keyword argument(s) {list(keywords)}")
        values = [*bound.args, *(bound.kwargs[key] for key in keywords)]
        return name, crossing(values, f"call_op passes {name}"), keywords

    def make_inputs(self, params, seed: int, device) -> list:
        """Returns the arguments of the recorded call on input `params["input"]`, its
        values made anew from `seed`."""
        kernel, perf, definition = self._loaded()
        index, device = int(params["input"]), str(device)
        made = self._made(definition, seed, device, index + 1, last_only=True)
        if len(made) <= index:
            raise RuntimeError(f"the performance file made {len(made)} inputs; input {index} asked for")
        if self.tree:
            values, tree = _leaves(definition, made[index], device, seed)
            if tree != self.tree:
                raise RuntimeError(f"call_op's input {index} changed its structure")
            return values
        name, values, keywords = self._call(kernel, perf, definition, made[index], device, seed)
        if (name, keywords) != (self.entry, self.keywords):
            raise RuntimeError(f"call_op called {name} {list(keywords)} on input {index}, not "
                               f"{self.entry} {list(self.keywords)}")
        return values

    def __call__(self, *inputs) -> list:
        """The reference: the recorded function of the reference module on `inputs` (the
        arguments it writes cloned first: the caller's stay as made); returns what it
        returns, then those arguments."""
        kernel, _, definition = self._loaded()
        inputs = [value.clone() if at in self.written else value for at, value in enumerate(inputs)]
        call = (whole_call_op(definition, self.tree) if self.tree else
                keyword_call(entry_function(kernel, self.entry), self.keywords))
        return outputs_of(call(*inputs), inputs, self.written)

    def record(self, device, count: int | None) -> dict:
        """Returns {"calls": these calls' fields, recorded on `device`} (`recorded`), or
        {"unrecordable": why}; raises whatever the suite's own code raised."""
        try:
            return {"calls": dataclasses.asdict(self.recorded(device, count))}
        except Unrecordable as error:
            return {"unrecordable": str(error)}

    def recorded(self, device, count: int | None) -> "PerformanceCalls":
        """Returns these calls recorded on `device` (the first `count` inputs; None: all):
        the function `call_op` calls on every input (or call_op whole, `_recorded_whole`),
        its arity, the arguments the reference writes. Raises Unrecordable (why) or whatever
        the suite's code raised."""
        import torch
        from torch.utils._pytree import tree_map

        kernel, perf, definition = self._loaded()
        device = str(device)
        made = self._made(definition, 1, device, count)
        if not made:
            raise Unrecordable("get_input_tensors made no input")
        # each input's first call, recorded before call_op runs whole below: run first, it
        # left its result in freed memory, and the recorded call's `out` (an `empty_like`)
        # got that block back already holding what the reference writes, which then looked
        # unwritten (a flaky "writes no argument" on the CPU)
        calls, refused = [], None
        for value in made:
            try:
                calls.append(self._call(kernel, perf, definition, value, device, 1))
            except Unrecordable as error:  # the first call alone; call_op whole may still be
                refused = refused or error
        several = []  # per input, the calls of the module it makes
        for at, value in enumerate(made):
            seen: list = []
            try:
                with salted_seeds(1, device), _recording(kernel, perf, seen):
                    # on copies: call_op runs the reference whole here, and on the recorded
                    # call's own tensors (to_cuda keeps a tensor already on the device) it left
                    # them written, so `written_by` saw its outputs unchanged
                    # (embedding_triton_kernel untimed as "writes no argument", RESULTS.md §32)
                    definition.call_op(definition.to_cuda(tree_map(_copied, value)))
                if device.startswith("cuda"):
                    torch.cuda.synchronize()  # a fault of this input's runs is raised here
            except torch.OutOfMemoryError:
                raise  # the device's memory, shared: the input may run alone
            except Exception as error:
                if refused is not None:  # its call was refused, and call_op fails whole: say why
                    raise refused from error
                raise InputFault(at, error) from error
            several.append(seen)
        counts = [len(seen) for seen in several]
        if 0 in counts:
            raise Unrecordable(f"call_op made no call of a function of the kernel module on "
                               f"input {counts.index(0)}")
        if max(counts) > 1:
            return self._recorded_whole(definition, made, device, several[0][0])
        single = refused
        if single is None:
            try:
                return self._recorded_single(kernel, perf, definition, made, device, calls)
            except Unrecordable as error:
                single = error
        try:  # int_scaled_matmul's call_op makes the triton Config it passes its one call
            return self._recorded_whole(definition, made, device, several[0][0])
        except Unrecordable as whole:
            raise Unrecordable(f"{single}; call_op whole: {whole}") from None

    def _recorded_single(self, kernel, perf, definition, made: list, device: str,
                         calls: list) -> "PerformanceCalls":
        """Returns these calls with the one call `call_op` makes of the module on every input
        (`calls`, per input) as the timed call; raises Unrecordable where it cannot be."""
        import torch

        names = sorted({(name, keywords) for name, _, keywords in calls})
        if len(names) > 1:
            raise Unrecordable(f"call_op calls different functions (or passes other keywords) "
                               f"on different inputs: {names}")
        arities = sorted({len(values) for _, values, _ in calls})
        if len(arities) > 1:
            raise Unrecordable(f"call_op passes {names[0][0]} {arities} arguments on different inputs")
        name, first, keywords = calls[0]
        if not any(isinstance(value, torch.Tensor) for value in first):
            raise Unrecordable(f"call_op passes {name} no tensor (it takes sizes and makes its own)")
        again = self._call(kernel, perf, definition, self._made(definition, 2, device, 1)[0], device, 2)[1]
        call = keyword_call(entry_function(kernel, name), keywords)
        written = written_by(lambda values: call(*values), first, again,
                             [values for _, values, _ in calls[1:]])
        return dataclasses.replace(self, entry=name, arity=len(first), written=written,
                                   inputs=len(made), keywords=keywords)

    def _recorded_whole(self, definition, made: list, device: str, first_call: str) -> "PerformanceCalls":
        """Returns these calls with call_op whole as the timed call, where it calls the module
        more than once on an input (chunk_gla_fwd: the intra-chunk kernel's output goes into
        the output kernel) or its one call cannot be the timed call (an argument call_op
        makes that does not cross to the worker): the leaves of its input (after `to_cuda`)
        are the arguments, the same structure on every input; the candidate module defines
        every function it calls. GEAK-eval times call_op whole too."""
        import torch

        leaves = [_leaves(definition, value, device, 1) for value in made]
        trees = sorted({tree for _, tree in leaves})
        if len(trees) > 1:
            raise Unrecordable("call_op's input has another structure on another input")
        first = leaves[0][0]
        if not any(isinstance(value, torch.Tensor) for value in first):
            raise Unrecordable("call_op's input holds no tensor (the module makes its own)")
        whole = dataclasses.replace(self, entry=first_call, tree=trees[0], arity=len(first),
                                    inputs=len(made))
        again = _leaves(definition, self._made(definition, 2, device, 1)[0], device, 2)[0]
        call = whole_call_op(definition, whole.tree)
        written = written_by(lambda values: call(*values), first, again,
                             [values for values, _ in leaves[1:]])
        return dataclasses.replace(whole, written=written)


def _leaves(definition, value, device: str, salt: int) -> tuple[list, str]:
    """Returns (the leaves of performance input `value` as call_op takes it, after
    `to_cuda`; its structure, serialized); raises Unrecordable when a leaf does not cross."""
    from torch.utils._pytree import tree_flatten, treespec_dumps

    with salted_seeds(salt, device):
        leaves, tree = tree_flatten(definition.to_cuda(value))
    return crossing(leaves, "call_op's input holds"), treespec_dumps(tree)


def keyword_call(function, keywords: tuple[str, ...]):
    """Returns `function` as a function of its arguments' values in order, the last of them
    passed by the keywords `keywords` (`PerformanceCalls.keywords`; the worker makes the
    candidate's the same way, `fitness.sandbox.worker`)."""
    if not keywords:
        return function

    def call(*values):
        split = len(values) - len(keywords)
        return function(*values[:split], **dict(zip(keywords, values[split:])))

    return call


def whole_call_op(definition, tree: str):
    """Returns call_op of performance `definition` as a function of its input's leaves
    (structure `tree`: `PerformanceCalls.tree`); the worker's is made the same way
    (`fitness.sandbox.worker`), with the candidate module in the reference's place."""
    from torch.utils._pytree import tree_unflatten, treespec_loads

    structure = treespec_loads(tree)
    return lambda *leaves: definition.call_op(tree_unflatten(list(leaves), structure))


def _copied(value):
    """Returns a tensor's clone, anything else as it is."""
    import torch

    return value.clone() if isinstance(value, torch.Tensor) else value


def outputs_of(returned, inputs, written) -> list:
    """Returns a call's outputs: the tensors it returned (None: none; a tuple's None items
    are left out, as the worker leaves them: fused_recurrent_delta's `(o, final_state)`
    without a final state), then the arguments at `written`. Raises Unrecordable when it
    returned something else."""
    import torch

    values = ([] if returned is None else [value for value in returned if value is not None]
              if isinstance(returned, (tuple, list)) else [returned])
    if not all(isinstance(value, torch.Tensor) for value in values):
        raise Unrecordable(f"the call returns {type(returned).__name__} holding other than tensors")
    outputs = values + [inputs[at] for at in written]
    if not outputs:
        raise Unrecordable("the call returns nothing and writes no argument")
    return outputs
