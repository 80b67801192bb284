"""The static gate's tables: what a candidate module may import, call and touch, per policy.

Allowlists, not denylists: a name nobody thought of is refused, and the refusal tells the
model what is allowed instead. The two policies differ only in how much torch the host side
may use: built-in tasks get allocation, layout (views, .contiguous()) and shape queries;
external suites (whose own reference kernels cast, concatenate and build `nn.Module`s) get a
looser list, widened per task by what the task's reference does. Everything that reaches the
interpreter, the harness or the launch machinery is refused in both.
"""

from __future__ import annotations

import builtins
import dataclasses


@dataclasses.dataclass(frozen=True)
class Policy:
    """What one task's candidates may use on the host side (kernel bodies are the same for all).

    Attributes:
      name: "builtin" (built-in and test suites) or "external".
      modules: modules that may be imported (`import m` / `from m import ...`).
      torch_names: dotted `torch.*` names the host may use (functions, dtypes, types).
      tensor_methods: methods the host may call on tensors (views, shape queries, allocation).
      tensor_attributes: tensor attributes refused on the host (transposed or aliased views).
      class_bases: dotted bases a module class may have besides classes of the module itself.
      entry_params_are_tensors: every unannotated, default-less parameter of the entry point
        holds a tensor (true of the built-in tasks: their references take tensors only).
      excused: (rule, key) pairs of violations this task's own reference commits on the host
        (external tasks only, see `policy.reference_excuses`); a candidate may commit them too.
      host_compute: torch math and value reads on the host are admitted (public torch by
        name, tensor methods, operators); the capability rules (reach, mutation, state) hold.
    """

    name: str
    modules: frozenset[str]
    torch_names: frozenset[str]
    tensor_methods: frozenset[str]
    tensor_attributes: frozenset[str]
    class_bases: frozenset[str]
    entry_params_are_tensors: bool
    excused: frozenset[tuple[str, str]] = frozenset()
    host_compute: bool = False


DTYPES = ("float16", "float32", "float64", "bfloat16", "half", "float", "double", "int8", "int16",
          "int32", "int64", "uint8", "long", "int", "short", "bool", "float8_e4m3fn", "float8_e5m2",
          "float8_e4m3fnuz", "float8_e5m2fnuz", "complex64")

MODULE_NAMES: dict[str, frozenset[str] | None] = {
    "__future__": None, "math": None, "typing": None, "numbers": None, "collections.abc": None,
    "functools": frozenset({"partial", "wraps", "reduce"}),
    "dataclasses": frozenset({"dataclass", "field", "replace", "fields", "astuple", "asdict"}),
    "enum": frozenset({"Enum", "IntEnum", "auto"}),
    "warnings": frozenset({"warn"}),
    "logging": frozenset({"getLogger", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"})}
"""Plain-Python modules a candidate may import, with the names it may use from each (None: any
public name). No caches (functools.lru_cache, cache), no containers that outlive a call
(collections), no clocks, files, processes or interpreter access."""

LOGGER_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical",
                            "log", "isEnabledFor"})
"""What host code may call on a module logger (`logger = logging.getLogger(__name__)`)."""

_BUILTIN_MODULES = frozenset(MODULE_NAMES) | frozenset({
    "torch", "torch.nn", "triton", "triton.language", "triton.language.math",
    "triton.language.extra", "triton.language.extra.cuda", "triton.language.extra.hip",
    "triton.language.extra.libdevice", "triton.tools.tensor_descriptor"})

_BUILTIN_TORCH = frozenset({f"torch.{name}" for name in DTYPES + (
    # allocation (the worker poisons fresh outputs, so an unwritten one shows)
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "full", "full_like",
    # memory layouts for allocation
    "contiguous_format", "preserve_format", "channels_last", "strided",
    # types for annotations and checks; autograd wrappers that only change what is recorded
    "Tensor", "dtype", "device", "Size", "finfo", "iinfo", "is_tensor", "no_grad", "inference_mode",
    "enable_grad", "autograd.Function", "nn.Module", "nn.Parameter",
    # read-only device queries (SM count, backend)
    "cuda.is_available", "cuda.current_device", "cuda.device_count", "cuda.device",
    "cuda.get_device_properties", "cuda.get_device_capability", "version.hip", "version.cuda",
    # a wait for the device: LLM wrappers end with it; it changes no result
    "cuda.synchronize")})

SHAPE_QUERIES = frozenset({"size", "stride", "numel", "nelement", "dim", "ndimension", "element_size",
                           "is_contiguous", "is_floating_point", "is_complex", "storage_offset",
                           "data_ptr", "get_device"})
"""Tensor methods that return plain numbers (data_ptr is for alignment checks; a cache keyed
on it is module-level state, refused as such)."""

REORDERING_METHODS = frozenset({"t", "transpose", "permute", "movedim", "swapaxes", "swapdims"})
REORDERING_ATTRIBUTES = frozenset({"T", "mT"})
"""Views that change the memory order: harmless layout on the host, except in a task whose
work is the data movement itself (tagged DATA_MOVEMENT_TAG), where they are refused."""

DATA_MOVEMENT_TAG = "data-movement"

_BUILTIN_TENSOR_METHODS = SHAPE_QUERIES | REORDERING_METHODS | frozenset({
    # views that keep the input's memory order, and the copy that makes one dense
    "view", "view_as", "reshape", "unsqueeze", "squeeze", "expand", "expand_as", "flatten",
    "unflatten", "narrow", "select", "split", "chunk", "unbind", "contiguous", "requires_grad_",
    # allocation
    "new_empty", "new_empty_strided", "new_zeros", "new_full", "zero_"})

_EXTERNAL_TORCH = _BUILTIN_TORCH | {f"torch.{name}" for name in (
    "ones", "ones_like", "arange", "cat", "stack", "tensor", "randn", "rand")}

_EXTERNAL_TENSOR_METHODS = _BUILTIN_TENSOR_METHODS | {
    "to", "cuda", "clone", "copy_",
    "fill_", "float", "half", "bfloat16", "int", "long", "type", "detach", "reshape_as",
    "register_buffer", "register_parameter", "parameters"}

BUILTIN = Policy(
    name="builtin", modules=_BUILTIN_MODULES, torch_names=_BUILTIN_TORCH,
    tensor_methods=_BUILTIN_TENSOR_METHODS,
    tensor_attributes=frozenset({"H", "mH", "data", "grad", "real", "imag"}),
    class_bases=frozenset({"object", "torch.autograd.Function", "torch.nn.Module", "typing.NamedTuple",
                           "enum.Enum", "enum.IntEnum"}),
    entry_params_are_tensors=True)

EXTERNAL = Policy(
    name="external", modules=_BUILTIN_MODULES, torch_names=_EXTERNAL_TORCH,
    tensor_methods=_EXTERNAL_TENSOR_METHODS, tensor_attributes=frozenset({"grad", "real", "imag"}),
    class_bases=BUILTIN.class_bases, entry_params_are_tensors=False)

HOST_COMPUTE = dataclasses.replace(EXTERNAL, host_compute=True)
HOST_COMPUTE_SUITES = ("tritonbench-revised", "rocm")
"""Suites whose candidates GEAK-eval runs with torch on the host (KernelBench's reference is
torch itself, so its candidates keep the external list)."""

TORCH_STATE_SETTERS = ("set_", "manual_seed", "seed", "use_deterministic")
"""`torch.*` names (by prefix) that change torch's global state (RNG, defaults, modes): refused
on the host even where torch math is admitted."""

DTYPE_PREFIXES = ("float", "int", "uint", "bfloat", "complex")
"""`torch.<name>` reads that name a dtype (or would: `torch.float8` in a branch never taken),
admitted as values where host torch is."""

HOST_TORCH_HINT = ("allocate (torch.empty...), make views (view, reshape, transpose...) and dense "
                   "copies (.contiguous()), and query shapes (size, stride, numel...); compute in a "
                   "Triton kernel")
"""How a host-torch violation ends: what host code may do instead."""

TORCH_INTERNALS = ("torch.library", "torch.ops", "torch.utils", "torch.compile", "torch.compiler",
                   "torch.cuda", "torch.backends", "torch.jit", "torch.fx", "torch.autograd",
                   "torch.overrides", "torch.distributed", "torch.multiprocessing", "torch.classes",
                   "torch.hub", "torch.package", "torch.export", "torch.profiler", "torch.testing",
                   "torch.func", "torch.storage", "torch.random", "torch.serialization")
"""`torch.*` prefixes that reach the dispatcher, the compiler, streams, or the harness."""

DEVICE_QUERIES = frozenset({"triton.runtime.driver.active.get_active_torch_device",
                            "triton.runtime.driver.active.get_current_target",
                            "triton.runtime.driver.active.utils.get_device_properties"})
"""Read-only device queries of Triton's runtime, as the tutorials write them (`DEVICE = ...`)."""

TRITON_NAMES = frozenset({"triton.jit", "triton.autotune", "triton.heuristics", "triton.Config",
                          "triton.cdiv", "triton.next_power_of_2",
                          "triton.tools.tensor_descriptor.TensorDescriptor"}) | DEVICE_QUERIES
"""`triton.*` names a module may use outside `triton.language` (which is open)."""

DECORATORS = frozenset({"triton.jit", "triton.autotune", "triton.heuristics", "torch.no_grad",
                        "torch.inference_mode", "torch.enable_grad", "functools.wraps", "staticmethod",
                        "classmethod", "property", "dataclasses.dataclass", "typing.overload"})
"""What may decorate a function or class: Triton's own, autograd-mode wrappers, and the
plain-Python ones that change no call's result (no caches)."""

GRID_CALLS = frozenset({"triton.cdiv", "triton.next_power_of_2", "min", "max"})
GRID_METHODS = frozenset({"numel", "size", "stride", "dim", "element_size"})
"""What a launch grid (a lambda, or a function passed as `kernel[grid]`) may call."""

KERNEL_CLOCKS = ("globaltimer", "%clock", "clock64", "s_memtime", "s_memrealtime")
"""Clock reads inside a kernel (a triton.language name, or text of inline assembly): with
them a kernel can tell back-to-back timed calls from checked ones, and no honest kernel
needs the time."""

KERNEL_BUILTINS = frozenset({"range", "min", "max", "abs", "float", "int", "bool", "len"})
"""Plain-Python names a @triton.jit body may call, besides triton.language and other kernels."""

FORBIDDEN_BUILTINS = frozenset({
    "getattr", "setattr", "delattr", "eval", "exec", "compile", "globals", "vars", "locals",
    "open", "breakpoint", "input", "type", "dir", "exit", "quit", "help", "memoryview"})

HOST_READS = frozenset({"item", "tolist", "cpu", "numpy", "storage", "untyped_storage",
                        "__array__", "__array_interface__", "__cuda_array_interface__",
                        "__dlpack__", "__dlpack_device__", "from_dlpack", "from_numpy"})
"""Attributes that copy tensor values to the host (and the torch functions that import them)."""

TENSOR_SAFE_BUILTINS = frozenset({"len", "isinstance", "id", "hash", "hasattr"})
"""The builtins that may take a tensor on the host; int(x), sum(x), print(x)... read its values."""

PYTHON_BUILTINS = frozenset(dir(builtins))

FRAME_ATTRIBUTES = frozenset({"gi_frame", "gi_code", "cr_frame", "cr_code", "ag_frame", "f_back",
                              "f_globals", "f_locals", "f_builtins", "f_code", "tb_frame", "tb_next"})
"""Attributes that walk from a generator or traceback to the harness's frames."""

LAUNCH_HOOK_KEYWORDS = frozenset({"pre_hook", "post_hook", "prune_configs_by", "early_config_prune",
                                  "perf_model", "do_bench", "launch_metadata", "repr"})
LAUNCH_HOOK_ATTRIBUTES = frozenset({"add_pre_run_hook", "launch_enter_hook", "launch_exit_hook",
                                    "knobs", "compiled_hook", "cache_hook", "set_allocator"})

MUTATING_METHODS = frozenset({"append", "extend", "insert", "pop", "popitem", "remove", "clear",
                              "update", "setdefault", "add", "discard", "sort", "reverse",
                              "appendleft", "popleft", "put", "intersection_update",
                              "difference_update", "symmetric_difference_update"})
READ_METHODS = frozenset({"get", "keys", "values", "items", "index", "count"})
READ_BUILTINS = frozenset({"len", "sorted", "tuple", "list", "min", "max", "enumerate", "zip",
                           "reversed", "any", "all", "sum", "dict", "set", "frozenset"})
"""How a function may use a module-level table: read it, never mutate or hand it on."""

FROZEN_CALLS = frozenset({"torch.device", "torch.finfo", "torch.iinfo", "triton.cdiv",
                          "triton.next_power_of_2", "triton.Config",
                          "triton.runtime.driver.active.get_active_torch_device",
                          "triton.runtime.driver.active.get_current_target"})
FROZEN_BUILTINS = frozenset({"int", "float", "bool", "str", "tuple", "frozenset", "min", "max", "abs",
                             "round", "len", "range"})
"""Calls whose results are immutable, so a module-level constant may hold one (with
constant arguments; `math.*` too)."""

_TENSOR_COMPUTE_OVERLAP = frozenset({"add", "index", "sort", "real", "imag"})
PYTHON_METHODS = frozenset(
    name for kind in (str, bytes, int, float, complex, tuple, list, dict, set, frozenset)
    for name in dir(kind) if not name.startswith("_")) - _TENSOR_COMPUTE_OVERLAP - {"format"}
"""Methods of Python's own types, callable on the host; those that are also tensor compute
methods (x.add, x.sort) are left out, and `str.format` is checked on its own (its fields can
read attributes)."""
