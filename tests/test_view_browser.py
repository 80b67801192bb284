"""The page in a real browser: headless Chromium (Debian's `chromium` and `chromium-driver`,
driven by Selenium; nothing is downloaded) opens `evo view` on an empty folder, a real
campaign then runs into that folder, and the open page shows its generations as they land.
The finished campaign's `evo report --html` file is then opened from disk: its plots and
lineage render, choosing a node shows that step, and a screenshot is kept at
experiments/report/screenshot.png.

The campaign's LLM is the scripted loopback server: the generator (the first population)
answers a kernel that adds the wrong way and every later role a correct one, so the best
kernel always has an ancestor to draw. (An offline campaign's best may be its seed: on the
interpreter the seed and its children differ by timing noise alone.)

Without a browser these tests fail (they are never skipped) and say how to install one:
`make setup` installs it where it can (root and apt-get).
"""

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

import campaign_processes
from evo import cli
from kernel_variants import vector_add_at
from offline_sweeps import sweep_toml
from scripted_server import Reply, ScriptedServer

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SCREENSHOT = ROOT / "experiments" / "report" / "screenshot.png"
GENERATIONS = 2
CONFIG_TOML = f"""
[campaign]
name = "browser"
tasks = ["vector_add"]
seed_with_baseline = false
[search]
generations = {GENERATIONS}
population = 3
offspring = 3
islands = 2
migration_interval = 2
[operators]
mode = "llm"
base_url = "BASE_URL"
model = "scripted"
api_key_env = ""
[fitness]
device = "interpreter"
workers = 2
"""
GENERATOR_ASKS = "Write a Python module that defines"  # operators/prompts/generator.txt
HOW_TO_INSTALL = (
    "the browser tests need headless Chromium and its driver: `sudo apt-get install chromium "
    "chromium-driver` (Debian/Ubuntu; `make setup` does it when run as root), or point "
    "KERNELEVO_CHROMIUM and KERNELEVO_CHROMEDRIVER at a Chromium binary and its chromedriver")
WAIT_S = 180


def _browser_paths() -> tuple[str, str]:
    chromium = os.environ.get("KERNELEVO_CHROMIUM") or next(
        (found for name in ("chromium", "chromium-browser", "google-chrome")
         if (found := shutil.which(name))), None)
    driver = os.environ.get("KERNELEVO_CHROMEDRIVER") or shutil.which("chromedriver") or next(
        (p for p in ("/usr/lib/chromium/chromedriver", "/usr/bin/chromedriver")
         if os.path.exists(p)), None)
    if not chromium or not driver:
        pytest.fail(f"{HOW_TO_INSTALL} (found browser: {chromium}, driver: {driver})",
                    pytrace=False)
    return chromium, driver


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.fail("the browser tests need Selenium: pip install -e '.[test]' (make setup "
                    "does it)", pytrace=False)
    chromium, driver_path = _browser_paths()
    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager must not fetch a driver
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in ("--headless=new", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1400,1000", "--no-first-run",
                     f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"):
        options.add_argument(argument)
    if os.geteuid() == 0:
        options.add_argument("--no-sandbox")  # Chromium refuses to run as root with it
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    yield driver
    driver.quit()


def _wait(condition, what: str, timeout_s: float = WAIT_S, poll_s: float = 0.2):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(poll_s)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def _generation_shown(driver) -> int | None:
    """Returns the page's "generation reached" card, None while it has none."""
    return driver.execute_script("""
        for (const card of document.querySelectorAll('#content .card')) {
          if (card.querySelector('span').textContent.startsWith('generation reached')) {
            return parseInt(card.querySelector('b').textContent, 10); } }
        return null;""")


def _errors(driver) -> list[str]:
    """Returns the console's errors (a favicon the server does not have is not one)."""
    return [e["message"] for e in driver.get_log("browser")
            if e["level"] == "SEVERE" and "favicon.ico" not in e["message"]]


@pytest.fixture(scope="module")
def llm():
    with ScriptedServer(_answer) as server:
        yield server


@pytest.fixture(scope="module")
def live(browser, llm, tmp_path_factory):
    """`evo view` on an empty folder, the page open, then `evo run` into that folder: returns
    what the open page showed as the campaign ran, and the finished folder."""
    base = tmp_path_factory.mktemp("browser")
    out = base / "run"
    out.mkdir()
    log = base / "view.log"
    viewer = subprocess.Popen([sys.executable, "-m", "evo", "view", str(out), "--port", "0"],
                              cwd=ROOT, stdout=open(log, "w"), stderr=subprocess.STDOUT,
                              start_new_session=True)
    run = None
    try:
        url = _wait(lambda: (re.search(r"http://127\.0\.0\.1:\d+/", log.read_text()) or [None])[0],
                    "evo view to print its address", 60)
        browser.get(url)
        waiting = browser.find_element("id", "content").text
        browser.execute_script("window.kernelevoMarker = 'the same page';")
        run = campaign_processes.start(_config(base, llm.base_url), out, terminal_folder=base)
        seen = [_generation_shown(browser)]

        def reached_last() -> bool:
            shown = _generation_shown(browser)
            if shown != seen[-1]:
                seen.append(shown)
            return shown == GENERATIONS

        _wait(reached_last, f"the open page to show generation {GENERATIONS}", poll_s=0.05)
        assert run.wait(timeout=WAIT_S) == 0, campaign_processes.terminal(run)[-3000:]
        marker = browser.execute_script("return window.kernelevoMarker;")
        status = browser.find_element("id", "live-status").text
        truncated = _truncated_part_while_open(browser, out)
        errors = _errors(browser)
        yield {"folder": out, "waiting": waiting, "seen": seen, "marker": marker,
               "status": status, "truncated": truncated, "errors": errors}
    finally:
        if run is not None and run.poll() is None:
            os.killpg(run.pid, 9)
        viewer.terminate()
        viewer.wait(timeout=30)


def _answer(request) -> Reply:
    """The generator (the first population, from the instruction alone): a kernel that
    subtracts (it fails the check); any other role, whose prompt holds a parent: a correct
    kernel at a block size drawn from the prompt."""
    prompt = request["messages"][-1]["content"]
    block = 256 << (len(prompt) % 3)
    if GENERATOR_ASKS in prompt:
        wrong = vector_add_at(block).replace("(x + y)", "(x - y)")
        assert wrong != vector_add_at(block), "the vector_add baseline no longer adds (x + y)"
        return Reply(f"Strategy: block {block}.\n```python\n{wrong}\n```")
    return Reply(f"Strategy: fixed, block {block}.\n```python\n{vector_add_at(block)}\n```")


def _config(folder: Path, base_url: str) -> Path:
    path = folder / "browser.toml"
    path.write_text(CONFIG_TOML.replace("BASE_URL", base_url))
    return path


def _truncated_part_while_open(driver, out: Path) -> dict:
    """Writes half a part into the open campaign, waits for the page to say so, removes it."""
    whole = sorted((out / "evaluations").glob("part-*.parquet"))[-1].read_bytes()
    half = out / "evaluations" / "part-99999-vector_add-i000.parquet"
    half.write_bytes(whole[: len(whole) // 2])
    note = _wait(lambda: "not whole yet" in driver.find_element("id", "content").text,
                 "the page to name the half-written part", 30)
    lineage_nodes = len(driver.find_elements("css selector", ".lineage .node"))
    half.unlink()
    _wait(lambda: "not whole yet" not in driver.find_element("id", "content").text,
          "the page to drop the note once the part is gone", 30)
    return {"note": note, "lineage_nodes": lineage_nodes}


def test_the_open_page_shows_generations_as_they_land(live):
    assert "Nothing to show yet" in live["waiting"]
    seen = live["seen"]  # each generation the page showed, in order (it polls every 1.5 s)
    assert seen[0] is None and seen[-1] == GENERATIONS and seen[1:] == sorted(seen[1:])
    assert live["marker"] == "the same page"  # updated in place, never reloaded
    assert live["status"].startswith("live")
    assert live["errors"] == []


def test_a_half_written_part_never_breaks_the_open_page(live):
    assert live["truncated"]["note"] is True
    assert live["truncated"]["lineage_nodes"] >= 2


@pytest.fixture(scope="module")
def report_page(live, browser):
    result = CliRunner().invoke(cli.app, ["report", str(live["folder"]), "--html"])
    assert result.exit_code == 0, result.output
    page = live["folder"] / "report.html"
    browser.get(page.as_uri())
    return browser


def test_plots_render_with_data(report_page):
    charts = report_page.find_elements("css selector", "svg.chart")
    assert len(charts) >= 6
    drawn = report_page.execute_script("""
        return Array.from(document.querySelectorAll('svg.chart')).map(svg => {
          const box = svg.getBoundingClientRect();
          return [svg.getAttribute('aria-label'), box.width, box.height,
                  svg.querySelectorAll('path.series, rect[fill]:not(.plot)').length]; });""")
    for label, width, height, marks in drawn:
        assert width > 300 and height > 200, label
    drawn_marks = {label: marks for label, _, _, marks in drawn}
    for label in ("Best speedup so far (interpreter timing)", "Correct rate per generation",
                  "Outcomes per generation", "Accuracy vs generation (cumulative)"):
        assert drawn_marks[label] > 0, label


def test_lineage_renders_and_choosing_a_node_shows_its_step(report_page):
    driver = report_page
    nodes = driver.find_elements("css selector", ".lineage .node")
    assert len(nodes) >= 2  # the oldest: a generator kernel of the first population that failed
    assert re.fullmatch(r"g1 i\d+ generator mismatch", nodes[0].text), nodes[0].text
    assert "failed" in nodes[0].get_attribute("class")
    best = driver.find_element("css selector", ".lineage .node.best")
    assert "selected" in best.get_attribute("class")
    best_detail = driver.find_element("id", f"detail-{best.get_attribute('data-node')}")
    assert best_detail.is_displayed()

    nodes[0].click()  # the failed ancestor: its detail replaces the best's
    first_detail = driver.find_element("id", f"detail-{nodes[0].get_attribute('data-node')}")
    assert first_detail.is_displayed() and not best_detail.is_displayed()
    assert "operator generator" in first_detail.text and "generation 1" in first_detail.text
    assert "correct False" in first_detail.text and "(x - y)" in first_detail.text

    best.click()  # back to the best: its diff against its parent
    assert best_detail.is_displayed() and not first_detail.is_displayed()
    assert "diff vs parent" in best_detail.text and "strategy" in best_detail.text
    changed = best_detail.find_elements("css selector", ".diff .add, .diff .del")
    assert changed and all(line.is_displayed() for line in changed)
    assert driver.find_element("css selector", ".final-source").is_displayed()
    assert _errors(driver) == []

    height = driver.execute_script("return document.documentElement.scrollHeight;")
    driver.set_window_size(1400, min(height + 40, 4000))
    driver.execute_script("window.scrollTo(0, 0);")
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    assert driver.save_screenshot(str(SCREENSHOT))
    driver.set_window_size(1400, 1000)

    import matplotlib.image

    pixels = matplotlib.image.imread(SCREENSHOT)
    assert pixels.shape[1] >= 1000 and pixels[..., :3].std() > 0.05


SWEEP_TOML = sweep_toml("browser-sweep", '"search.islands" = [1, 2]', "generations = 1")


@pytest.fixture(scope="module")
def sweep_page(browser, tmp_path_factory, shared_ray):
    """A real offline sweep under the interpreter, its `evo report --html` page open."""
    from evo import sweep

    folder = tmp_path_factory.mktemp("sweep")
    (folder / "sweep.toml").write_text(SWEEP_TOML)
    assert sweep.main(folder / "sweep.toml", out=folder / "out") == 0
    result = CliRunner().invoke(cli.app, ["report", str(folder / "out"), "--html"])
    assert result.exit_code == 0, result.output
    browser.get((folder / "out" / "report.html").as_uri())
    return browser


def test_the_sweep_page_draws_the_scaling_question_and_says_timing_is_noise(sweep_page):
    driver = sweep_page
    drawn = driver.execute_script("""
        return Object.fromEntries(Array.from(document.querySelectorAll('svg.chart')).map(svg => {
          const box = svg.getBoundingClientRect();
          return [svg.getAttribute('aria-label'), [box.width, box.height,
                  svg.querySelectorAll('path.series').length,
                  svg.querySelectorAll('rect.band').length]]; }));""")
    for label in ("Accuracy vs generation", "Best speedup vs generation (interpreter timing)",
                  "Accuracy vs evaluations", "Best speedup vs eval-seconds (interpreter timing)",
                  "Accuracy vs islands", "Best speedup vs islands (interpreter timing)"):
        width, height, lines, bands = drawn[label]
        assert width > 300 and height > 200 and lines > 0, label
        assert bands == (1 if label.startswith("Best speedup") else 0), label
    text = driver.find_element("id", "content").text
    for line in ("interpreter timing: speedups not meaningful (no best by speed: ranked by "
                 "correctness)", "noise band of vector_add: the seed (the baseline against "
                 "itself) read", "Best candidate per task (over every cell)",
                 "by correctness; timing not meaningful here", "Generations x islands",
                 "At equal compute: evaluations", "evo.analysis.load_sweep("):
        assert line in text, line
    best_row = driver.find_element("xpath", "//h2[starts-with(., 'Best candidate')]"
                                             "/following-sibling::table[1]//tbody/tr")
    assert best_row.is_displayed() and "n/a (interpreter)" in best_row.text
    assert _errors(driver) == []
