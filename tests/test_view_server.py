"""`evo view DIR`: a read-only loopback server that serves the page and the files inside DIR
and nothing else (path traversal, encoded dots, absolute paths, symlinks out), and keeps
serving while parts land or lie half-written. Real HTTP on 127.0.0.1; no browser."""

import contextlib
import http.client
import json
import shutil
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evo import ending, view
from evo.results import EVALUATION_SCHEMA
from synthetic_results import evaluation, example_campaign, llm_call, write_campaign

SECRET = "not to be served\n"


@contextlib.contextmanager
def _serving(folder):
    server = view.make_server(folder, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _get(port, path, method="GET", host=None):
    """Sends `path` exactly as given (no normalization), returns (status, body)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.putrequest(method, path, skip_host=host is not None, skip_accept_encoding=True)
    if host is not None:
        connection.putheader("Host", host)
    connection.endheaders()
    response = connection.getresponse()
    body = response.read()
    connection.close()
    return response.status, body


@pytest.fixture()
def served(tmp_path):
    """A campaign folder beside a secret file, an outside folder, and symlinks pointing out."""
    folder = example_campaign(tmp_path / "campaign")
    (tmp_path / "secret.txt").write_text(SECRET)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "also-secret.txt").write_text(SECRET)
    (folder / "figures").mkdir()
    (folder / "figures" / "link-out.txt").symlink_to(tmp_path / "secret.txt")
    (folder / "linked-dir").symlink_to(tmp_path / "outside")
    (folder / "figures" / "inside.txt").write_text("inside\n")
    (folder / "figures" / "link-in.txt").symlink_to(folder / "figures" / "inside.txt")
    with _serving(folder) as port:
        yield folder, port


@pytest.mark.parametrize("path", [
    "/../secret.txt", "/../../etc/passwd", "/%2e%2e/secret.txt", "/%2e%2e/%2e%2e/etc/passwd",
    "/files/../secret.txt", "/files/%2e%2e/secret.txt", "/files/%2E%2E%2Fsecret.txt",
    "/files/..%2f..%2fetc%2fpasswd", "/files/figures/../../secret.txt", "/files//etc/passwd",
    "/files/%2fetc%2fpasswd", "//etc/passwd", "/files/figures/link-out.txt",
    "/files/linked-dir/also-secret.txt", "/files/.hidden", "/files/evaluations/%00.parquet",
    "/files/..\\secret.txt", "http://127.0.0.1/../secret.txt",
])
def test_nothing_outside_the_folder_is_served(served, path):
    _, port = served
    status, body = _get(port, path)
    assert status in (403, 404), (path, status)
    assert b"not to be served" not in body and b"root:" not in body


def test_files_inside_the_folder_are_served(served):
    folder, port = served
    status, body = _get(port, "/files/campaign.json")
    assert status == 200 and json.loads(body)["config"]["search"]["islands"] == 3
    assert _get(port, "/files/figures/link-in.txt") == (200, b"inside\n")  # a link that stays in
    status, body = _get(port, "/files/evaluations/part-00001.parquet")
    assert status == 200 and body == (folder / "evaluations" / "part-00001.parquet").read_bytes()


def test_it_is_read_only_and_answers_loopback_names_only(served):
    folder, port = served
    before = sorted(p.name for p in folder.rglob("*"))
    for method in ("POST", "PUT", "DELETE"):
        status, _ = _get(port, "/files/campaign.json", method=method)
        assert status == 501, method
    assert _get(port, "/", host="attacker.example")[0] == 403  # DNS rebinding
    assert _get(port, "/", host=f"localhost:{port}")[0] == 200
    assert _get(port, "/", method="HEAD")[0] == 200
    assert sorted(p.name for p in folder.rglob("*")) == before


def test_the_page_follows_parts_as_they_land_even_half_written(served):
    folder, port = served
    status, page = _get(port, "/")
    assert status == 200 and b'data-live="1"' in page and b"generation reached" in page
    stamp = json.loads(_get(port, "/state.json")[1])["stamp"]
    assert f'data-stamp="{stamp}"'.encode() in page
    part = folder / "evaluations" / "part-00003.parquet"
    pq.write_table(pa.Table.from_pylist(
        [evaluation("add", 2, 3, call_ok=True, correct=True, speedup=4.0)],
        schema=EVALUATION_SCHEMA), part)
    whole = part.read_bytes()
    part.write_bytes(whole[:100])  # a part still being written
    stamp_half = json.loads(_get(port, "/state.json")[1])["stamp"]
    assert stamp_half != stamp
    status, page = _get(port, "/")
    assert status == 200
    assert b"skipped a part that is not whole yet: evaluations/part-00003.parquet" in page
    assert b"2.50x" in page  # the rows that are whole still show
    part.write_bytes(whole)
    status, page = _get(port, "/")
    assert status == 200 and b"4.00x" in page and b"not whole yet" not in page


def test_a_folder_that_is_not_a_campaign_yet_is_served_a_waiting_page(tmp_path):
    with _serving(tmp_path) as port:
        status, page = _get(port, "/")
        assert status == 200 and b"Nothing to show yet" in page
        shutil.copytree(example_campaign(tmp_path / "elsewhere"), tmp_path / "run")
        status, page = _get(port, "/")  # a sweep-like folder now: a campaign inside it
        assert status == 200 and b"Sweep " in page


def test_a_running_campaign_with_no_rows_yet_is_served_a_waiting_page(tmp_path):
    failed = {**llm_call("add", 0, 0, 0, 0.0), "success": False, "failure_kind": "timeout",
              "error": "the endpoint did not answer within 60 s"}
    folder = write_campaign(tmp_path / "c", [], [failed], islands=1, name="starting")
    with _serving(folder) as port:
        status, page = _get(port, "/")
        assert status == 200 and b'data-live="1"' in page
        assert b"Nothing to show yet: waiting for the first generation" in page
        assert b"could not be made" not in page  # not the error page
        assert b"LLM calls: 1, 1 failed" in page and b"did not answer within 60 s" in page
        ending.record(folder, "llm_failures", "stopped: the LLM calls kept failing")
        status, page = _get(port, "/")
        assert status == 200 and b"waiting for the first generation" not in page
        assert b"No candidate was scored" in page and b"the LLM calls kept failing" in page


def test_a_missing_folder_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no results folder"):
        view.make_server(tmp_path / "missing", "127.0.0.1", 0)


def test_a_busy_port_is_named_with_the_way_out(tmp_path):
    from typer.testing import CliRunner

    from evo import cli

    folder = example_campaign(tmp_path / "campaign")
    with _serving(folder) as port:  # the port is taken, by another `evo view`
        result = CliRunner().invoke(cli.app, ["view", str(folder), "--port", str(port)])
    assert result.exit_code == 2, result.output
    assert result.output.strip() == (
        f"error: port {port} on 127.0.0.1 is in use (another `evo view`?): choose "
        "another with --port N, or --port 0 for any free port")
