"""Device detection: the one place that decides cuda | rocm | interpreter. Everything
downstream reads a DeviceInfo instead of probing torch, so the backends cannot disagree."""

from __future__ import annotations

import dataclasses
import os

BACKENDS = ("cuda", "rocm", "interpreter")
REQUESTS = ("auto",) + BACKENDS

AMD_ONLY_LAUNCH_OPTIONS = ("waves_per_eu", "matrix_instr_nonkdim", "kpack")
"""Launch options Triton accepts only on AMD; NVIDIA rejects them."""
UNMEASURED = {
    "interpreter": "interpreter: timing not meaningful",
    "rocm": "rocm: timing not meaningful, the judge's GPU clock is not wired for HIP",
}
"""Backends whose latencies are recorded but flagged, with the words a verdict line gives.
The interpreter's measure Python, not a kernel. ROCm's are the worker's CPU time: the judge's
GPU clock needs stream memory operations and shareable device buffers, bound for CUDA only
(`fitness.processes.stream_sync`, `shared_memory`), and CPU time does not bound GPU work: a
worker that waits for its GPU asleep would read as free (docs/design.md, "Threat model")."""


@dataclasses.dataclass(frozen=True)
class DeviceInfo:
    """What the fitness room needs to know about the device it scores on.

    Attributes:
      backend: "cuda", "rocm" or "interpreter".
      name: the device's marketing name, as torch reports it, or "cpu-interpreter".
      index: the torch device index inside this process (0 under Ray's visible-device mask).
      peak_bandwidth_gbs: DRAM bandwidth in GB/s, None when unknown (no roofline check).
      peak_tflops: dtype name -> dense peak TFLOP/s; "float32" is the non-tensor-core rate.
      llc_bytes: last-level cache size (L2, or MI300X's 256 MB Infinity Cache); the timing
        flush buffer is larger than this.
    """

    backend: str
    name: str
    index: int = 0
    peak_bandwidth_gbs: float | None = None
    peak_tflops: dict[str, float] = dataclasses.field(default_factory=dict)
    llc_bytes: int = 0

    @property
    def torch_device(self) -> str:
        """Returns the torch device string inputs are created on ("cuda:0" or "cpu")."""
        return "cpu" if self.backend == "interpreter" else f"cuda:{self.index}"

    @property
    def timing_meaningful(self) -> bool:
        """Whether latencies here are the judge's measure of the kernel (`UNMEASURED`)."""
        return self.backend not in UNMEASURED

    def roofline_parts_s(self, flops: float, bytes_moved: float,
                         dtype: str = "float32") -> tuple[float, float] | None:
        """Returns (compute s, memory s) of that work at the peaks, None when unknown."""
        if self.peak_bandwidth_gbs is None:
            return None
        tflops = self.peak_tflops.get(dtype) or self.peak_tflops.get("float32")
        compute_s = flops / (tflops * 1e12) if tflops else 0.0
        return compute_s, bytes_moved / (self.peak_bandwidth_gbs * 1e9)

    def roofline_s(self, flops: float, bytes_moved: float, dtype: str = "float32") -> float | None:
        """Returns the fastest time physically possible for that work, None when unknown."""
        parts = self.roofline_parts_s(flops, bytes_moved, dtype)
        return None if parts is None else max(parts)


_MB = 1 << 20
# Known parts: (substring of the device name, bandwidth GB/s, {dtype: TFLOP/s}, LLC bytes).
# Peaks are the datasheet's dense numbers; an unknown GPU falls back to torch's L2 size and
# no roofline check rather than a guess.
_KNOWN = (
    ("H200", 4800.0, {"float32": 67.0, "float16": 989.0, "bfloat16": 989.0}, 50 * _MB),
    ("H100", 3350.0, {"float32": 67.0, "float16": 989.0, "bfloat16": 989.0}, 50 * _MB),
    ("A100", 2039.0, {"float32": 19.5, "float16": 312.0, "bfloat16": 312.0}, 40 * _MB),
    ("MI300X", 5300.0, {"float32": 163.4, "float16": 1307.0, "bfloat16": 1307.0}, 256 * _MB),
    ("MI250X", 3277.0, {"float32": 95.7, "float16": 383.0, "bfloat16": 383.0}, 8 * _MB),
)


class DeviceError(RuntimeError):
    """The requested backend is not available here; the message says what is."""


def _gpu_info(backend: str) -> DeviceInfo:
    import torch

    props = torch.cuda.get_device_properties(0)
    name = props.name
    arch = getattr(props, "gcnArchName", "") or ""
    for marker, bandwidth, tflops, llc in _KNOWN:
        # MI300X reports gfx942 and sometimes an empty marketing name.
        if marker in name or (marker == "MI300X" and arch.startswith("gfx942")):
            return DeviceInfo(backend, name or marker, 0, bandwidth, dict(tflops), llc)
    l2_bytes = int(getattr(props, "L2_cache_size", 0) or 0)
    return DeviceInfo(backend, name, 0, None, {}, max(l2_bytes, 64 * _MB))


def detect(requested: str = "auto") -> DeviceInfo:
    """Returns the device to score on: "auto" picks a GPU when torch sees one (ROCm when
    `torch.version.hip` is set), else the interpreter; an absent GPU backend raises DeviceError."""
    if requested not in REQUESTS:
        raise DeviceError(f"unknown device {requested!r}; expected one of {', '.join(REQUESTS)}")
    if requested == "interpreter":
        return DeviceInfo("interpreter", "cpu-interpreter")
    import torch

    has_gpu = torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET", "0") in ("", "0")
    gpu_backend = "rocm" if getattr(torch.version, "hip", None) else "cuda"
    if requested == "auto":
        return _gpu_info(gpu_backend) if has_gpu else DeviceInfo("interpreter", "cpu-interpreter")
    if not torch.cuda.is_available():
        raise DeviceError(f"device {requested!r} requested but torch sees no GPU "
                          f"(torch {torch.__version__}); use --device interpreter")
    if requested != gpu_backend:
        raise DeviceError(f"device {requested!r} requested but this torch build is {gpu_backend}")
    return _gpu_info(gpu_backend)
