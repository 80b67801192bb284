"""Build the offline install for a GPU box without network: `make wheelhouse DIR=path`.

Run it on a machine with network (x86_64 Debian or Ubuntu for the bubblewrap part). DIR gets:

* the project's own wheel, and `requirements.txt`: the project's runtime requirements plus its
  `external` extra (pytest: external suites' harnesses, and the tests) and its `diagnose`
  extra (py-spy: stacks of a stalled evaluator's processes), less the packages the
  GPU box already has (--have; torch, triton, numpy, pyarrow, pandas and matplotlib by
  default: they are large and come with the box's CUDA stack);
* wheels for everything those requirements pull in, for the box's Python (--python-version,
  3.12 by default; manylinux x86_64), resolved by pip itself (`pip install --dry-run --report`);
* ray slimmed: without its Java jar, its dashboard's web client and its AI libraries (RLlib,
  Tune, Train, Serve, Data, LLM), none of which a local Ray running actors loads; RECORD and
  the console scripts are rewritten to match, so pip installs it as any other wheel;
* bwrap/: bubblewrap (the candidate sandbox) from this machine's distribution with the shared
  libraries it needs beyond glibc, its RPATH set to $ORIGIN so that `DIR/bwrap/bwrap` runs on a
  box that has none of them (it needs that box's glibc to be at least the one it was built for).

The whole stays under the device tool's 64 MiB carry limit (about 54 MiB with ray 2.60 and
py-spy).
On the GPU box: `source experiments/perf/gpu_env.sh DIR` (README.md, "Running on a GPU").

usage: python3 tools/wheelhouse.py DIR [--python-version 3.12] [--have NAMES] [--no-bwrap]
"""
from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from email.parser import Parser
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64")
HAVE = "torch triton numpy pyarrow pandas matplotlib"
EXTRAS = ("external", "diagnose")
LIMIT_MIB = 60
# Parts of the ray wheel a local Ray running actors never loads: the Java worker's jar, the
# dashboard's compiled web client (KernelEvo starts Ray with include_dashboard=False) and the
# AI libraries, which only the dashboard's serve/train modules import, lazily.
RAY_DROPPED = ("ray/jars/", "ray/dashboard/client/build/", "ray/rllib/", "ray/tune/",
               "ray/train/", "ray/serve/", "ray/data/", "ray/llm/")
# Libraries every glibc system has: bwrap's copies of anything else go in DIR/bwrap/.
GLIBC = {"libc.so.6", "ld-linux-x86-64.so.2", "libm.so.6", "libpthread.so.0", "libdl.so.2",
         "librt.so.1", "libresolv.so.2"}
SKIPPED_DEBS = {"libc6", "libgcc-s1"}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    print("+", " ".join(argv), flush=True)
    return subprocess.run(argv, check=True, **kwargs)


def pip(*args: str) -> None:
    run([sys.executable, "-m", "pip", *args])


def target_flags(python_version: str) -> list[str]:
    flags = ["--python-version", python_version, "--implementation", "cp", "--only-binary=:all:"]
    for platform in PLATFORMS:
        flags += ["--platform", platform]
    return flags


WALK_SKIPPED = (".git", ".venv", "build", "results", "__pycache__", ".pytest_cache", ".wheelhouse")


def _git_listing(root: Path) -> list[str]:
    """What `git ls-files` says is worth packing at root: a checkout's own git, tracked files
    and those it would add; for a tree that is not the top of a repository of its own, an
    empty repository pointed at it (so its .gitignore decides, not an enclosing repository's,
    which may ignore it whole or by rules of its own)."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], check=True, capture_output=True).stdout.decode()

    listing = ["ls-files", "-z", "--others", "--exclude-standard"]
    top = subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel"],
                         capture_output=True, text=True).stdout.strip()
    if top and Path(top).resolve() == root:
        return git("-C", str(root), *listing, "--cached").split("\0")
    with tempfile.TemporaryDirectory(prefix="wheelhouse-git-") as empty:
        git("init", "-q", "--bare", empty)
        return git(f"--git-dir={empty}", f"--work-tree={root}", "-C", str(root), *listing).split("\0")


def project_files(root: Path) -> list[str]:
    """The files of the checkout (or exported tree) at root worth packing, relative to it,
    sorted: those git knows or would add, as they stand; without git, the tree walked."""
    root = root.resolve()
    try:
        names = _git_listing(root)
    except (OSError, subprocess.CalledProcessError):  # no git
        names = [path.relative_to(root).as_posix() for path in root.rglob("*")
                 if not any(part in WALK_SKIPPED or part.endswith(".egg-info")
                            for part in path.relative_to(root).parts)]
    return sorted(name for name in names if name and (root / name).is_file())


def project_wheel(out: Path, tmp: Path) -> Path:
    """Builds the project's wheel (no dependencies) into out, from a copy of the checkout.

    Out of tree: setuptools builds through build/ and leaves it (and an egg-info) behind, and
    a module moved since an earlier build would still be in build/lib and so in the wheel.
    """
    source, build = tmp / "source", tmp / "project"
    for name in project_files(ROOT):
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    pip("wheel", "-q", "--no-deps", "-w", str(build), str(source))
    (wheel,) = build.glob("kernelevo-*.whl")
    return Path(shutil.copy(wheel, out))


def requirements(wheel: Path, have: set[str]) -> list[str]:
    """The wheel's runtime requirements and those of its EXTRAS, less the packages in have."""
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(archive.read(name).decode())
    wanted = []
    for line in metadata.get_all("Requires-Dist") or []:
        spec, _, marker = line.partition(";")
        extra = re.search(r"""extra\s*==\s*["']([^"']+)["']""", marker)
        if extra and extra.group(1) not in EXTRAS:
            continue
        if marker.strip() and not extra:
            spec = line  # a platform marker: pip evaluates it on the box
        project = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", spec).group(1)
        if canonical(project) not in have and spec.strip() not in wanted:
            wanted.append(spec.strip())
    return wanted


def resolve(wanted: list[str], have: set[str], python_version: str, tmp: Path) -> list[str]:
    """Pins of everything wanted pulls in for the box, as pip resolves it, less have."""
    report = tmp / "report.json"
    pip("install", "-q", "--dry-run", "--ignore-installed", "--report", str(report),
        "--target", str(tmp / "unused"), *target_flags(python_version), *wanted)
    pins = []
    for item in json.loads(report.read_text())["install"]:
        name, version = item["metadata"]["name"], item["metadata"]["version"]
        if canonical(name) not in have:
            pins.append(f"{name}=={version}")
    return pins


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def slim_ray(src: Path, dst: Path) -> None:
    """Writes src without RAY_DROPPED, its RECORD and console scripts rewritten to match.

    (`wheel unpack`/`wheel pack` would redo RECORD too, but the `wheel` tool is neither a
    dependency of the project nor in a plain Python; zipfile and hashlib do it here.)
    """
    def dropped(name: str) -> bool:
        return name.startswith(RAY_DROPPED) or name.endswith(".js.map")

    rows, record_name = [], None
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED,
                                                       compresslevel=9) as zout:
        for info in zin.infolist():
            name = info.filename
            if dropped(name):
                continue
            if name.endswith(".dist-info/RECORD"):
                record_name = name
                continue
            data = zin.read(name)
            if name.endswith(".dist-info/entry_points.txt"):
                data = _drop_entry_points(data.decode(), dropped).encode()
            if not name.endswith("/"):
                rows.append((name, _record_hash(data), str(len(data))))
            out = zipfile.ZipInfo(name, date_time=info.date_time)
            out.external_attr = info.external_attr
            zout.writestr(out, data, zipfile.ZIP_DEFLATED, 9)
        if record_name is None:
            raise SystemExit(f"{src}: no RECORD")
        text = io.StringIO()
        writer = csv.writer(text, lineterminator="\n")
        writer.writerows(rows + [(record_name, "", "")])
        out = zipfile.ZipInfo(record_name, date_time=(2020, 1, 1, 0, 0, 0))
        out.external_attr = 0o644 << 16
        zout.writestr(out, text.getvalue(), zipfile.ZIP_DEFLATED, 9)
    print(f"ray slimmed: {src.stat().st_size / 2**20:.1f} MiB -> {dst.stat().st_size / 2**20:.1f} MiB")


def _drop_entry_points(text: str, dropped) -> str:
    """Entry points whose module is no longer in the wheel (`serve`, `tune`) go too."""
    kept = []
    for line in text.splitlines():
        target = line.partition("=")[2].strip().partition(":")[0]
        if target and dropped(target.replace(".", "/") + "/"):
            continue
        kept.append(line)
    return "\n".join(kept) + "\n"


def wheels(out: Path, pins: list[str], python_version: str, tmp: Path) -> None:
    download = tmp / "download"
    pip("download", "-q", "--no-deps", "-d", str(download), *target_flags(python_version), *pins)
    for wheel in sorted(download.glob("*.whl")):
        if canonical(wheel.name.split("-")[0]) == "ray":
            slim_ray(wheel, out / wheel.name)
        else:
            shutil.move(str(wheel), out / wheel.name)


def _apt_depends(package: str) -> list[str]:
    text = subprocess.run(["apt-cache", "depends", package], check=True, capture_output=True,
                          text=True).stdout
    return [re.sub(r":\w+$", "", line.split(":", 1)[1].strip().strip("<>"))
            for line in text.splitlines() if line.strip().startswith(("Depends:", "PreDepends:"))]


def _debs(packages: list[str], tmp: Path, libraries: bool = True) -> Path:
    """Downloads packages (and, with libraries, the libraries they need) and unpacks them."""
    seen, todo = set(), list(packages)
    while todo:
        package = todo.pop()
        if package in seen or package in SKIPPED_DEBS:
            continue
        seen.add(package)
        if libraries:
            todo += [dep for dep in _apt_depends(package) if dep.startswith("lib")]
    debs, root = tmp / "debs", tmp / "root"
    debs.mkdir()
    try:
        run(["apt-get", "download", *sorted(seen)], cwd=debs, stdout=subprocess.DEVNULL)
    except subprocess.CalledProcessError:
        raise SystemExit("apt-get download failed: run `apt-get update` first (or pass --no-bwrap)")
    for deb in sorted(debs.glob("*.deb")):
        run(["dpkg-deb", "-x", str(deb), str(root)])
    return root


def _patchelf(tmp: Path) -> str:
    """patchelf from PATH, else from this distribution's package, unpacked (not installed)."""
    found = shutil.which("patchelf")
    if found:
        return found
    root = _debs(["patchelf"], tmp / "patchelf", libraries=False)  # libstdc++: apt has it too
    return str(root / "usr/bin/patchelf")


def bubblewrap(out: Path, tmp: Path) -> None:
    """DIR/bwrap/: the bwrap binary and the libraries it needs beyond glibc, found via $ORIGIN."""
    if not (shutil.which("apt-get") and shutil.which("dpkg-deb")):
        raise SystemExit("bubblewrap: needs apt-get and dpkg-deb (Debian/Ubuntu); pass --no-bwrap to skip it")
    arch = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True).stdout.strip()
    if arch != "amd64":
        raise SystemExit(f"bubblewrap: this machine is {arch}, the GPU box x86_64; pass --no-bwrap")
    (tmp / "patchelf").mkdir()
    patchelf = _patchelf(tmp)
    root = _debs(["bubblewrap"], tmp)
    libraries = {path.name: path for pattern in ("lib/*-linux-gnu/*.so.*", "usr/lib/*-linux-gnu/*.so.*")
                 for path in root.glob(pattern)}
    dest = out / "bwrap"
    dest.mkdir()
    binary = Path(shutil.copy(root / "usr/bin/bwrap", dest / "bwrap"))
    todo, copied = [binary], []
    while todo:
        needed = subprocess.run([patchelf, "--print-needed", str(todo.pop())], check=True,
                                capture_output=True, text=True).stdout.split()
        for soname in needed:
            if soname in GLIBC or (dest / soname).exists():
                continue
            if soname not in libraries:
                raise SystemExit(f"bubblewrap: {soname} is in none of the packages fetched")
            library = Path(shutil.copy(libraries[soname], dest / soname))  # follows the symlink
            copied.append(library)
            todo.append(library)
    run([patchelf, "--force-rpath", "--set-rpath", "$ORIGIN", str(binary)])
    for library in copied:
        run([patchelf, "--set-rpath", "$ORIGIN", str(library)])
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    version = subprocess.run([str(binary), "--version"], check=True, capture_output=True,
                             text=True, env=env).stdout.strip()
    print(f"bubblewrap: {version}, with {', '.join(sorted(p.name for p in copied))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path, help="where the wheelhouse goes (made if missing)")
    parser.add_argument("--python-version", default="3.12", help="the GPU box's Python (default 3.12)")
    parser.add_argument("--have", default=HAVE,
                        help=f"packages the GPU box already has, left out (default: {HAVE!r})")
    parser.add_argument("--no-bwrap", action="store_true", help="leave bubblewrap out")
    args = parser.parse_args()
    out: Path = args.dir
    out.mkdir(parents=True, exist_ok=True)
    # what an earlier build left here (only what this tool makes)
    for old in [*out.glob("*.whl"), out / "requirements.txt"]:
        old.unlink(missing_ok=True)
    shutil.rmtree(out / "bwrap", ignore_errors=True)
    have = {canonical(name) for name in args.have.replace(",", " ").split()}
    with tempfile.TemporaryDirectory(prefix="wheelhouse-") as name:
        tmp = Path(name)
        wheel = project_wheel(out, tmp)
        wanted = requirements(wheel, have)
        (out / "requirements.txt").write_text(
            f"# {wheel.name}'s requirements and its extras ({', '.join(EXTRAS)}), less what the "
            f"GPU box has ({' '.join(sorted(have))})\n" + "".join(f"{spec}\n" for spec in wanted))
        wheels(out, resolve(wanted, have, args.python_version, tmp), args.python_version, tmp)
        if not args.no_bwrap:
            bubblewrap(out, tmp)
    files = sorted(p for p in out.rglob("*") if p.is_file())
    total = sum(p.stat().st_size for p in files) / 2**20
    for path in files:
        print(f"{path.stat().st_size / 2**20:8.2f} MiB  {path.relative_to(out)}")
    print(f"{total:.1f} MiB in {out} ({len(files)} files)")
    if total > LIMIT_MIB:
        raise SystemExit(f"{out} is over {LIMIT_MIB} MiB: the device tool carries at most 64 MiB")


if __name__ == "__main__":
    main()
