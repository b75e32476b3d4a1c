"""`gnoctl web` in a real browser: keystroke to painted results, and the first load's bytes.

    python benchmarks/web_latency.py [FOLDER] [--runs 3]

Indexes FOLDER (default: the English tldr pages) in a gnod of its own (no models:
search as you type is lexical), starts `gnoctl web`, and types queries into the page
in headless Chromium (Debian's chromium and chromium-driver, through Selenium) one
character at a time, each after the previous one's results were painted. The page
measures each keystroke itself (Performance API: from the input event's timestamp
to the frame after the results went into the page): web_typed_p50_ms= / _p90_ms=.
Beside it, in the same run, `gnoctl search` for the same prefixes (a new process per
query, as a shell pays it): gnoctl_search_p50_ms= / _p90_ms=, and gnod's own took_ms
(daemon_search_p50_ms=). first_load_bytes= is what the browser transferred for the
search page with everything it loads (Resource Timing's transferSize, cache empty).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from common import REPO, Daemon, emit, tldr_pages
from common import percentile as p
from gnoctl.web.search import as_typed

QUERIES = [
    "extract tar archive",
    "list directory contents",
    "mount filesystem",
    "compress files",
    "network interface",
    "systemd service logs",
    "search text in files",
    "copy files remotely",
    "disk usage",
    "kill process",
]
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1200,900"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def typed(driver, base: str, runs: int) -> list[float]:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    durations: list[float] = []
    for _ in range(runs):
        for query in QUERIES:
            driver.get(base + "/")
            box = driver.find_element(By.ID, "q")
            for ch in query:
                before = driver.execute_script("return performance.getEntriesByName('gno:typed').length")
                box.send_keys(ch)
                WebDriverWait(driver, 10, poll_frequency=0.005).until(
                    lambda d: d.execute_script("return performance.getEntriesByName('gno:typed').length") > before
                )
            durations += driver.execute_script("return performance.getEntriesByName('gno:typed').map(e => e.duration)")
    return durations


def first_load(driver, base: str) -> int:
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd("Network.clearBrowserCache", {})
    driver.get(base + "/")
    time.sleep(0.5)  # the event stream opens after load; it is not part of the page's weight
    return driver.execute_script("""
        const nav = performance.getEntriesByType('navigation')[0].transferSize;
        return nav + performance.getEntriesByType('resource')
            .filter(r => !r.name.includes('/events/')).reduce((n, r) => n + r.transferSize, 0);""")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", nargs="?", help="folder to index (default: the English tldr pages)")
    ap.add_argument("--runs", type=int, default=3, help="times each query is typed")
    args = ap.parse_args()
    corpus = os.path.abspath(args.folder or tldr_pages("pages"))
    subprocess.run([sys.executable, "-m", "compileall", "-q", "gnod", "gnoctl"], cwd=REPO, check=True)
    with Daemon() as d:
        t0 = time.perf_counter()
        d.call("collection.add", {"name": "bench", "path": corpus, "index": True})
        emit(documents=d.call("status")["documents"], index_s=time.perf_counter() - t0)
        env = {**d.env, "GNO_NO_AUTOSTART": "1", "PYTHONPATH": REPO}
        web = subprocess.Popen(
            [sys.executable, "-m", "gnoctl.main", "web", "--port", "0"],
            env=env,
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            address = web.stdout.readline().split("open ", 1)[1].strip()
            base = address.split("/?", 1)[0]
            driver = browser()
            try:
                driver.get(address)  # the key becomes the cookie
                durations = typed(driver, base, args.runs)
                emit(keystrokes=len(durations), web_typed_p50_ms=p(durations, 0.5), web_typed_p90_ms=p(durations, 0.9))
                driver.quit()
                driver = browser()  # a fresh profile: nothing cached
                driver.get(address)
                emit(first_load_bytes=first_load(driver, base))
            finally:
                driver.quit()
        finally:
            web.terminate()
            web.wait(10)
        gnoctl = os.path.join(os.path.dirname(sys.executable), "gnoctl")
        prefixes = [as_typed(q[:i]) for q in QUERIES for i in range(2, len(q) + 1) if q[:i].strip()]
        wall, daemon = [], []
        for text in prefixes:
            t0 = time.perf_counter()
            r = subprocess.run([gnoctl, "search", "--json", "--", text], env=env, capture_output=True)
            wall.append((time.perf_counter() - t0) * 1000)
            if r.returncode not in (0, 1):
                raise SystemExit(f"gnoctl failed: {r.stderr.decode()}")
            daemon.append(json.loads(r.stdout)["took_ms"])
        emit(
            gnoctl_searches=len(wall),
            gnoctl_search_p50_ms=p(wall, 0.5),
            gnoctl_search_p90_ms=p(wall, 0.9),
            daemon_search_p50_ms=p(daemon, 0.5),
            daemon_search_p90_ms=p(daemon, 0.9),
        )


if __name__ == "__main__":
    main()
