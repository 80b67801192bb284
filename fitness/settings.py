"""`[fitness]`: every knob of scoring, validated once into a frozen `Settings` that travels
whole from the config file through the FitnessActor to the Evaluator."""

from __future__ import annotations

import dataclasses
from typing import Literal, Mapping, Optional, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator

from fitness.processes.jail import Limits as SandboxLimits

Device = Literal["auto", "cuda", "rocm", "interpreter"]
Sandbox = Literal["bwrap", "off"]
SANDBOX_MODES = get_args(Sandbox)

@dataclasses.dataclass(frozen=True)
class Limits:
    """Time limit of each stage, in seconds; a stage past its limit is killed.

    Attributes:
      import_s: writing and importing the candidate module.
      compile_s: the precompile (every case's kernels, none launched) and the first call, each.
      check_s: each further correctness call, and each comparison in the checker.
      bench_s: staging, timing every case, the re-check call (each).
      reference_s: an external task's reference run through its own harness, once per task
        (it may autotune every config). An external candidate's run gets `harness_run_s`.
      ready_s: a new worker's start-up (charged to no candidate).
      stall_s: not a stage limit: how long the candidate's own Python code may run with no
        Triton launch between (import and correctness calls) before its worker ends it as a
        timeout (`sandbox.instrument.StallWatch`): an entry point needs little host code,
        and a host loop would otherwise hold a worker for a whole stage limit.
    """

    import_s: float = 60.0
    compile_s: float = 180.0
    check_s: float = 60.0
    bench_s: float = 300.0
    reference_s: float = 900.0
    ready_s: float = 120.0
    stall_s: float = 3.0

    @classmethod
    def from_mapping(cls, values: Mapping[str, float] | None) -> "Limits":
        """Returns Limits from {"import_s": 30, "compile": 60, ...}; unknown keys raise."""
        names = {field.name for field in dataclasses.fields(cls)}
        chosen = {}
        for key, value in (values or {}).items():
            name = key if key.endswith("_s") else f"{key}_s"
            if name not in names:
                raise ValueError(f"unknown fitness timeout {key!r}; known: {sorted(names)}")
            if not (isinstance(value, (int, float)) and value > 0):
                raise ValueError(f"fitness timeout {key!r} must be a positive number, got {value!r}")
            chosen[name] = float(value)
        return cls(**chosen)

    @property
    def harness_run_s(self) -> float:
        """An external candidate's harness run: its import, compile and check in one process."""
        return self.import_s + self.compile_s + self.check_s

    @classmethod
    def uniform(cls, seconds: float) -> "Limits":
        """Returns the same limit for every candidate stage (start-up and the stall limit
        keep their defaults)."""
        return cls(import_s=seconds, compile_s=seconds, check_s=seconds, bench_s=seconds)


class Settings(BaseModel):
    """How candidates are scored; the `[fitness]` section of a config (evo's `Fitness` adds
    the engine's own knobs to it).

    Attributes:
      device: "auto" picks CUDA, then ROCm, then Triton's CPU interpreter.
      workers: sandboxed candidate worker slots per Evaluator (one per FitnessActor).
      spares: slots started beside the lent ones; unset: half of `workers`, at least 1.
      sandbox: "bwrap" scores candidates only inside the bubblewrap sandbox (and refuses
        to start without one); "off" scores them without it, and every row says so.
      static_gate: refuse candidates that break the lint (no launch, I/O, global settings).
      time_every_case: time every case of every correct candidate, none given up as a clear
        loser (1.2x the best seen, on its first): for a table that averages every correct
        candidate's speedup, the slow ones' too (direct prompting's Table 2, as GEAK-eval).
      timeouts: each stage's limit in seconds (`Limits`; `compile = 60` or `compile_s = 60`).
      sandbox_limits: the hard resource limits of every sandboxed process.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    device: Device = "auto"
    workers: int = Field(default=2, ge=1)
    spares: Optional[int] = Field(default=None, ge=0)
    sandbox: Sandbox = "bwrap"
    static_gate: bool = True
    time_every_case: bool = False
    timeouts: Limits = Field(default_factory=Limits)
    sandbox_limits: SandboxLimits = Field(default_factory=SandboxLimits)

    @field_validator("timeouts", mode="before")
    @classmethod
    def _stage_limits(cls, value):
        return value if isinstance(value, Limits) else Limits.from_mapping(value)

    @property
    def sandboxed(self) -> bool:
        """Whether candidates run inside the OS sandbox."""
        return self.sandbox == "bwrap"

    def scoring(self) -> "Settings":
        """Returns these settings alone, without a subclass's engine knobs: what crosses to
        a FitnessActor."""
        return Settings(**{name: getattr(self, name) for name in Settings.model_fields})
