"""The walls around untrusted code: every process that imports or runs candidate code is
started by `command()` alone.

Under bubblewrap: a PID namespace hides the engine, checkers and siblings (no
`/proc/<pid>/environ`, no writing into their pipes, no signals; a `setsid` grandchild dies with
the worker). A mount view from an allowlist (system directories, Python, the `fitness` package,
GPU device nodes) shows no secret file, other candidate or result, and one private writable
directory as /sandbox takes every write. The network namespace leaves nothing to exfiltrate to.
A variable enters only by name (`ENV_ALLOWLIST`). Through `fitness.sandbox.entry`: uid 65534
(mapped by a user namespace when the engine is not root) and hard limits on memory, processes,
file size and CPU time.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

NOBODY_UID = 65534
NOBODY_GID = 65534

ENV_ALLOWLIST = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_HOME", "CUDA_PATH",
                 "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HSA_OVERRIDE_GFX_VERSION",
                 "ROCM_PATH", "LD_LIBRARY_PATH", "TRITON_PTXAS_PATH", "TRITON_LIBCUDA_PATH",
                 "LANG", "LC_ALL")
"""The only variables copied from the engine's environment into a sandbox, by exact name."""

_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys")
_GPU_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/kfd", "/dev/dri")
_PROJECT_PACKAGE = pathlib.Path(__file__).resolve().parents[1]
"""Only the `fitness` package of the project is visible inside (not benchmarks, not results)."""

SANDBOX_TMP = "/sandbox"
"""Where the private directory appears inside: not /tmp, which may hold the project itself."""
_PRIVATE_TMP_BYTES = 256 << 20


class SandboxUnavailable(RuntimeError):
    """No working bubblewrap here; the message says how to get one or how to opt out."""


@dataclasses.dataclass(frozen=True)
class Limits:
    """Hard resource limits of a sandboxed process (setrlimit; inherited by its children).

    Attributes:
      memory_bytes: address space (RLIMIT_AS) under the interpreter; on a GPU, where the
        driver reserves address space the size of all device memory, the data segment
        (RLIMIT_DATA: private writable memory, i.e. what a candidate can pin or fill).
      processes: processes and threads of the sandbox's uid (RLIMIT_NPROC).
      file_bytes: largest file it may write (RLIMIT_FSIZE).
      cpu_s: CPU seconds over the process's life (RLIMIT_CPU); the engine lowers it before
        each stage to (used + stage limit), so a spinning candidate dies at its limit even
        if the engine itself is stopped.
    """

    memory_bytes: int = 16 << 30
    processes: int = 1024
    file_bytes: int = 4 << 30
    cpu_s: int = 24 * 3600


def find_bwrap() -> str | None:
    """Returns the bubblewrap binary: $KERNELEVO_BWRAP, then PATH."""
    explicit = os.environ.get("KERNELEVO_BWRAP")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    return shutil.which("bwrap")


def _bwrap_env(binary: str) -> dict[str, str]:
    """The environment bwrap itself runs with (a wheelhouse bwrap finds its libraries)."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LD_LIBRARY_PATH": os.path.dirname(os.path.abspath(binary))}


def _python_dirs() -> list[str]:
    """Directories the sandboxed Python needs: its installation and every import path."""
    dirs = {sys.prefix, sys.base_prefix, sys.exec_prefix,
            os.path.dirname(os.path.realpath(sys.executable))}
    project_root = str(_PROJECT_PACKAGE.parent)
    for entry in sys.path:
        if entry and os.path.isdir(entry) and os.path.realpath(entry) != os.path.realpath(project_root):
            dirs.add(entry)
    dirs.update(os.environ[var] for var in ("CUDA_HOME", "CUDA_PATH", "ROCM_PATH")
                if os.environ.get(var))
    dirs.update(p for p in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p)
    dirs.update(glob.glob("/opt/rocm*"))
    existing = sorted(os.path.realpath(d) for d in dirs if os.path.isdir(d))
    # Keep only the outermost of nested directories: one bind each.
    outermost: list[str] = []
    for path in existing:
        if not any(path == kept or path.startswith(kept + os.sep) for kept in outermost):
            outermost.append(path)
    return outermost


def process_env(names: tuple[str, ...], home: str, pythonpath: str,
                backend: str) -> dict[str, str]:
    """Returns the environment of a fitness process, sandboxed or a checker: the variables
    `names` copied by exact name (an allowlist cannot miss a secret the way a list of
    suspicious names can), its files kept under `home`, the interpreter set by `backend`."""
    env = {name: os.environ[name] for name in names if name in os.environ}
    env.update(HOME=home, TMPDIR=home, TRITON_CACHE_DIR=os.path.join(home, "triton-cache"),
               PYTHONPATH=pythonpath, PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1")
    env.pop("TRITON_INTERPRET", None)
    if backend == "interpreter":
        env["TRITON_INTERPRET"] = "1"
    return env


def sandbox_env(backend: str, home: str = SANDBOX_TMP) -> dict[str, str]:
    """Returns the environment of a sandboxed process: the allowlist plus fixed values."""
    env = process_env(ENV_ALLOWLIST, home, str(_PROJECT_PACKAGE.parent), backend)
    env.update(PATH=f"{os.path.dirname(sys.executable)}:/usr/local/bin:/usr/bin:/bin",
               PYTHONNOUSERSITE="1", OMP_NUM_THREADS="1")
    env.setdefault("LANG", "C.UTF-8")
    return env


def _parents(paths: list[str]) -> list[str]:
    """Returns every ancestor directory of `paths`, outermost first, excluding "/"."""
    parents: dict[str, None] = {}
    for path in paths:
        parts = pathlib.PurePosixPath(path).parents
        for parent in reversed(list(parts)[:-1]):
            parents[str(parent)] = None
    return list(parents)


def _bwrap_argv(binary: str, workdir: str, ro_dirs: dict[str, str], env: dict[str, str]) -> list[str]:
    as_root = os.geteuid() == 0
    argv = [binary, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net",
            "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--clearenv",
            "--perms", "1777", "--size", str(_PRIVATE_TMP_BYTES), "--tmpfs", "/tmp"]
    if not as_root:  # an unprivileged engine maps its own uid to nobody in a user namespace
        argv += ["--unshare-user", "--uid", str(NOBODY_UID), "--gid", str(NOBODY_GID)]
    for path in _SYSTEM_DIRS:
        argv += ["--ro-bind-try", path, path]
    binds = {path: path for path in _python_dirs()}
    binds[str(_PROJECT_PACKAGE)] = str(_PROJECT_PACKAGE)
    binds.update(ro_dirs)
    # bwrap makes mount points' parents 0700; the unprivileged uid must traverse them.
    for parent in _parents(list(binds.values())):
        argv += ["--perms", "0755", "--dir", parent]
    for host, inside in binds.items():
        argv += ["--ro-bind", host, inside]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    for node in _GPU_NODES + tuple(sorted(glob.glob("/dev/nvidia[0-9]*"))):
        argv += ["--dev-bind-try", node, node]
    argv += ["--bind", workdir, SANDBOX_TMP, "--chdir", SANDBOX_TMP]
    for name, value in sorted(env.items()):
        argv += ["--setenv", name, value]
    return argv + ["--"]


def _gpu_groups() -> list[int]:
    """Groups owning GPU device nodes (ROCm's render/video), kept after dropping to nobody."""
    groups = set()
    for node in glob.glob("/dev/kfd") + glob.glob("/dev/dri/render*"):
        groups.add(os.stat(node).st_gid)
    return sorted(groups)


def prepare_workdir(workdir: str) -> None:
    """Makes the private directory writable by the sandbox's uid (the engine may be root)."""
    if os.geteuid() == 0:
        os.chown(workdir, NOBODY_UID, NOBODY_GID)
    os.chmod(workdir, 0o700)


def command(module: str, args: list[str], *, workdir: str, backend: str, limits: Limits,
            use_bwrap: bool, ro_dirs: dict[str, str] | None = None
            ) -> tuple[list[str], dict[str, str]]:
    """Returns (argv, env) that run `python -m module args` sandboxed in `workdir`.

    `ro_dirs` maps host directories to read-only mount points inside (a suite checkout,
    the trusted side's input directory). With `use_bwrap=False` (`[fitness] sandbox =
    "off"`) only the limits and the environment allowlist remain, its files in `workdir`.
    """
    env = sandbox_env(backend, SANDBOX_TMP if use_bwrap else workdir)
    settings = {"limits": dataclasses.asdict(limits), "backend": backend,
                "drop_to": ([NOBODY_UID, NOBODY_GID, _gpu_groups()]
                            if os.geteuid() == 0 and use_bwrap else None)}
    python = [sys.executable, "-m", "fitness.sandbox.entry", json.dumps(settings), module, *args]
    if not use_bwrap:
        return python, env
    binary = find_bwrap()
    if binary is None:
        raise SandboxUnavailable(unavailable_message())
    return _bwrap_argv(binary, workdir, ro_dirs or {}, env) + python, _bwrap_env(binary)


def unavailable_message(detail: str = "") -> str:
    return ("no working bubblewrap sandbox" + (f" ({detail})" if detail else "") + ": candidate "
            "kernels are untrusted code and are only scored inside one. Install it (Debian/Ubuntu: "
            "`apt-get install bubblewrap`; a GPU box without network: the `bwrap/` folder that "
            "`make wheelhouse` builds, via KERNELEVO_BWRAP=/path/to/bwrap), or set "
            "`[fitness] sandbox = \"off\"` to score without one (every verdict is then marked "
            "unsandboxed).")


def verify(backend: str) -> None:
    """Runs a trivial sandboxed Python; raises SandboxUnavailable naming what failed."""
    binary = find_bwrap()
    if binary is None:
        raise SandboxUnavailable(unavailable_message("bwrap not found"))
    workdir = tempfile.mkdtemp(prefix="kernelevo-sandbox-check-")
    try:
        prepare_workdir(workdir)
        argv, env = command("fitness.sandbox.hello", [], workdir=workdir, backend=backend,
                            limits=Limits(), use_bwrap=True)
        try:
            done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            raise SandboxUnavailable(unavailable_message("a trivial sandboxed run hung")) from None
        if done.returncode != 0 or "sandbox-ok" not in done.stdout:
            raise SandboxUnavailable(unavailable_message(
                f"{binary} failed: {(done.stderr or done.stdout).strip()[-400:]}"))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
