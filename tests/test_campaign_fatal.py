"""Fatal causes a user can fix end a real `evo run` with one plain line (the cause, what was
kept, the command that continues) and the traceback in DIR/evo-run.log, not on the terminal;
a results folder that cannot hold the campaign is refused before Ray starts."""

import contextlib
import subprocess
import sys

import pytest

import campaign_processes as runs
from evo import campaign, config as config_lib, fatal, preflight, run_log

pytestmark = pytest.mark.slow  # campaign-level: `make test-fast` leaves it out

SMALL_DISK_BYTES = 2 * 1024 * 1024
"""Room for the preflight (6 rows of 64 KiB and the log's room); the test fills the rest
mid-run."""


@pytest.fixture(scope="module")
def reference(interpreter_fitness, tmp_path_factory):
    """The rows of a clean run with the same seed."""
    folder = tmp_path_factory.mktemp("reference")
    out = folder / "run"
    campaign.run_campaign(config_lib.load(runs.config_file(folder)), out,
                          fitness_actors=interpreter_fitness)
    return runs.rows(out)


@contextlib.contextmanager
def _tmpfs(folder, size_bytes: int, *options: str):
    """Mounts a tmpfs of `size_bytes` at `folder` (we run as root); yields whether it did."""
    folder.mkdir()
    opts = ",".join([f"size={size_bytes}", *options])
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(folder)],
                             capture_output=True).returncode == 0
    try:
        yield mounted
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(folder)], check=True)


def _fill(folder) -> None:
    """Fills the file system of `folder` to the last byte, as another program could."""
    with open(folder / "ballast", "wb", buffering=0) as ballast:
        with contextlib.suppress(OSError):
            while True:
                ballast.write(b"\0" * 4096)


def test_a_full_disk_is_one_plain_line_and_resume_after_freeing_space_matches(
        reference, interpreter_fitness, tmp_path):
    config_path, small = runs.config_file(tmp_path), tmp_path / "small"
    with _tmpfs(small, SMALL_DISK_BYTES) as mounted:
        assert mounted, "could not mount a small tmpfs (the test runs as root)"
        out = small / "run"
        process = runs.start(config_path, out, terminal_folder=tmp_path)
        try:
            runs.wait_for_generation(process, out, 2)
            _fill(small)
            process.wait(timeout=120)
        finally:
            runs.kill_leftovers(process, [])
        said = runs.terminal(process)
        last = said.strip().splitlines()[-1]
        assert process.returncode == fatal.EXIT_STATUS, said[-3000:]
        assert "Traceback" not in said, said[-3000:]
        assert last.startswith("no space left on the device"), last
        assert f"continue with: evo run {config_path} --out {out} --resume" in last
        assert f"traceback in {out / run_log.LOG_NAME}" in last
        logged = (out / run_log.LOG_NAME).read_text()
        assert "Traceback" in logged and "No space left on device" in logged
        assert set(runs.rows(out)) <= set(reference)
        print(f"full disk: {last}")

        (small / "ballast").unlink()  # space freed
        summary = campaign.run_campaign(config_lib.load(config_path), out, resume=True,
                                        fitness_actors=interpreter_fitness)
        assert summary.generations_done == runs.GENERATIONS
        assert runs.rows(out) == reference  # 0 lost, 0 extra


def _evo_run(tmp_path, out, *extra, ray_dir):
    return subprocess.run([sys.executable, "-m", "evo", "run", str(runs.config_file(tmp_path)),
                           "--out", str(out), *extra], cwd=runs.ROOT, capture_output=True,
                          text=True, timeout=120,
                          env={**runs.clean_env(), "RAY_TMPDIR": str(ray_dir)})


@pytest.mark.parametrize("debug", [False, True], ids=["plain", "debug"])
def test_ray_that_cannot_start_is_one_plain_line_and_debug_shows_the_traceback(tmp_path, debug):
    (tmp_path / "ray-file").write_text("Ray's folder should be here")  # Ray cannot make it
    out = tmp_path / "run"
    done = _evo_run(tmp_path, out, *(["--debug"] if debug else []),
                    ray_dir=tmp_path / "ray-file")
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == fatal.EXIT_STATUS, done.stderr[-3000:]
    assert last.startswith("could not start a local Ray: NotADirectoryError"), last
    assert last.endswith(f"kept: nothing checkpointed yet; continue with: evo run "
                         f"{runs.config_file(tmp_path)} --out {out}; traceback in "
                         f"{out / run_log.LOG_NAME}")
    assert ("Traceback" in done.stderr + done.stdout) == debug
    assert "in session\n    ray.init(" in (out / run_log.LOG_NAME).read_text()


def _refused(tmp_path, out):
    """Runs `evo run` into `out`; returns its exit status and stderr, and whether Ray made
    its folder (RAY_TMPDIR points at one of ours)."""
    done = _evo_run(tmp_path, out, ray_dir=tmp_path / "ray")
    return done.returncode, done.stderr, (tmp_path / "ray").exists()


def test_a_file_where_the_results_folder_should_be_is_refused_before_ray(tmp_path):
    (tmp_path / "taken").write_text("a file, not a folder")
    status, said, ray_started = _refused(tmp_path, tmp_path / "taken" / "run")
    assert status == 2 and not ray_started
    assert said.strip().splitlines() == [
        f"error: results folder {tmp_path / 'taken' / 'run'}: {tmp_path / 'taken'} is a file, "
        "not a folder; choose another --out (nothing was started)"]


def test_a_read_only_results_folder_is_refused_before_ray(tmp_path):
    with _tmpfs(tmp_path / "ro", SMALL_DISK_BYTES, "ro") as mounted:
        assert mounted, "could not mount a read-only tmpfs (the test runs as root)"
        status, said, ray_started = _refused(tmp_path, tmp_path / "ro" / "run")
    assert status == 2 and not ray_started
    assert len(said.strip().splitlines()) == 1, said
    assert "cannot write in" in said and "Read-only file system" in said


def test_a_folder_without_room_for_a_generation_is_refused_before_ray(tmp_path):
    with _tmpfs(tmp_path / "tiny", 64 * 1024) as mounted:
        assert mounted, "could not mount a small tmpfs (the test runs as root)"
        status, said, ray_started = _refused(tmp_path, tmp_path / "tiny" / "run")
    assert status == 2 and not ray_started
    assert len(said.strip().splitlines()) == 1, said
    needed_kib = (6 * preflight.ROW_BYTES + run_log.RESERVE_BYTES) // 1024
    assert f"one generation needs about {needed_kib} KiB (6 rows)" in said
