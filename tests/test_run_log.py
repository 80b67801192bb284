"""DIR/evo-run.log holds text, whatever happened to the runs before: each run's start, a failed
run's traceback, never the NUL bytes of room reserved for a traceback and not given back (a
run killed outright used to leave 256 KiB of them, kept through every later run)."""

from evo import run_log


def test_a_run_killed_outright_leaves_no_nul_bytes_and_the_next_run_logs_text(tmp_path):
    run_log.RunLog(tmp_path)  # killed outright: neither write() nor release() ever runs
    resumed = run_log.RunLog(tmp_path)
    resumed.release()

    logged = (tmp_path / run_log.LOG_NAME).read_bytes()
    assert b"\0" not in logged
    assert logged.decode().count("--- evo run started at ") == 2
    assert not (tmp_path / run_log.RESERVE_NAME).exists()


def test_a_log_an_earlier_version_filled_with_reserved_nul_bytes_keeps_only_its_text(tmp_path):
    (tmp_path / run_log.LOG_NAME).write_bytes(
        b"--- evo run failed at 2026-01-01 00:00:00\nTraceback: disk full\n"
        + b"\0" * run_log.RESERVE_BYTES)
    run_log.RunLog(tmp_path).release()

    logged = (tmp_path / run_log.LOG_NAME).read_text()
    assert "\0" not in logged
    assert logged.startswith("--- evo run failed at 2026-01-01 00:00:00\nTraceback: disk full\n"
                             "--- evo run started at ")


def test_a_failed_run_appends_its_traceback_after_its_start_in_the_reserved_room(tmp_path):
    log = run_log.RunLog(tmp_path)
    assert (tmp_path / run_log.RESERVE_NAME).stat().st_size == run_log.RESERVE_BYTES
    where = log.write("Traceback (most recent call last):\nOSError: [Errno 28] No space left")
    log.release()

    assert where == tmp_path / run_log.LOG_NAME
    lines = where.read_text().splitlines()
    assert lines[0].startswith("--- evo run started at ")
    assert lines[1].startswith("--- evo run failed at ")
    assert lines[2:] == ["Traceback (most recent call last):", "OSError: [Errno 28] No space left"]
    assert not (tmp_path / run_log.RESERVE_NAME).exists()
