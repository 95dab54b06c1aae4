"""The process's headless browser (:mod:`audit.present.browser`, real Chromium): one figure drawn as SVG, PNG and
PDF at the asked size, several figures drawn at once from several threads each coming back as its own, a document
printed to as many A4 pages as it has, a page script's error named without taking the browser down, no page
reading local files; and a browser that is missing or never answers: one error, nothing left running, later calls
failing at once."""
from __future__ import annotations

import base64
import http.server
import os
import re
import shutil
import struct
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import plotly.graph_objects as go
import plotly.io as pio
import pytest

from audit.errors import AuditError
from helpers import running_with
from audit.present import browser

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(not (shutil.which("chromium") or shutil.which("chromium-browser")),
                                reason="needs Chromium (make chromium)")


def _figure(title: str) -> str:
    return pio.to_json(go.Figure(go.Scatter(x=[1, 2, 3], y=[3, 1, 2]), layout=dict(title=title)), validate=False)


def _pdf_pages(pdf: bytes, tmp_path) -> list[tuple[float, float]]:
    """(width, height) in points of each page, as pdfinfo reads them."""
    path = tmp_path / "out.pdf"
    path.write_bytes(pdf)
    info = subprocess.run(["pdfinfo", "-f", "1", "-l", "99", str(path)], capture_output=True, text=True,
                          check=True).stdout
    return [(float(w), float(h)) for w, h in re.findall(r"Page\s+\d+ size:\s+([\d.]+) x ([\d.]+) pts", info)]


def test_one_figure_as_svg_png_and_pdf_at_the_asked_size(tmp_path):
    figure = _figure("sizes")
    svg = browser.figure_image_later(figure, "svg", 640, 360)().decode("utf-8")
    assert svg.startswith("<svg") and 'width="640"' in svg and 'height="360"' in svg and ">sizes<" in svg
    png = browser.figure_image_later(figure, "png", 640, 360, 2)()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24]) == (1280, 720)  # scale 2
    pdf = browser.figure_image_later(figure, "pdf", 640, 360)()
    assert pdf.startswith(b"%PDF") and _pdf_pages(pdf, tmp_path) == [(480.0, 270.0)]  # 96 px = 72 pt, one page


def test_figures_started_at_once_from_several_threads_come_back_each_as_its_own():
    titles = [f"figure number {i}" for i in range(8)]
    with ThreadPoolExecutor(4) as threads:
        started = list(threads.map(lambda t: browser.figure_image_later(_figure(t), "svg", 400, 300), titles))
        drawn = list(threads.map(lambda wait: wait().decode("utf-8"), started))
    for title, svg in zip(titles, drawn):
        assert re.findall(r">(figure number \d)<", svg) == [title]


def test_a_document_prints_to_as_many_a4_pages_as_it_has(tmp_path):
    page = "<section style='break-after:page'>page</section>"
    html = f"<!DOCTYPE html><html><head><style>@page{{size:A4}}</style></head><body>{page * 3}</body></html>"
    sizes = _pdf_pages(browser.print_pdf(html.encode("utf-8")), tmp_path)
    assert len(sizes) == 3 and all(abs(w - 595.3) < 1 and abs(h - 841.9) < 1 for w, h in sizes)


def test_a_page_scripts_error_is_named_and_the_browser_stays_up():
    with pytest.raises(browser.PageError, match="could not run the page's script: Error: no such table"):
        browser.evaluate_in(b"<html><body></body></html>", "(() => { throw new Error('no such table') })()")
    assert browser.evaluate_in(b"<html><body><p>a</p><p>b</p></body></html>",
                               "document.querySelectorAll('p').length") == 2


def test_a_page_cannot_read_other_local_files(tmp_path):
    """The same-origin rules stay on (choreographer lifts them by default): a document the tool shows, which holds
    user text, cannot read a file beside it."""
    secret = tmp_path / "secret.txt"
    secret.write_text("not for pages")
    read = f"fetch({secret.as_uri()!r}).then(r => r.text()).catch(e => 'refused')"
    assert browser.evaluate_in(b"<html><body></body></html>", read) == "refused"


@pytest.fixture
def no_browser_yet(monkeypatch):
    """The module as in a new process (no browser started, none broken), with a 3 s deadline; the test's own browser
    state is put back after it."""
    monkeypatch.setattr(browser, "_session", None)
    monkeypatch.setattr(browser, "_broken", None)
    monkeypatch.setattr(browser, "DEADLINE", 3.0)
    return monkeypatch


def test_a_browser_that_never_answers_is_killed_at_the_deadline_and_later_calls_fail_at_once(no_browser_yet,
                                                                                             tmp_path):
    silent = tmp_path / "silent-chrome"
    silent.write_text("#!/bin/sh\nsleep 600 &\nsleep 600\n")
    silent.chmod(0o755)
    no_browser_yet.setenv("BROWSER_PATH", str(silent))
    started = time.monotonic()
    with pytest.raises(AuditError, match=r"needs a working Chrome/Chromium .*: no answer within 3 s$"):
        browser.figure_image_later(_figure("never"), "svg", 100, 100)()
    assert time.monotonic() - started < 10
    time.sleep(0.5)
    assert not running_with(str(silent))
    started = time.monotonic()
    with pytest.raises(AuditError, match="no answer within 3 s$"):
        browser.print_pdf(b"<html><body>later</body></html>")
    assert time.monotonic() - started < 0.5


def test_a_working_browser_past_the_deadline_is_not_blamed_on_a_missing_chrome(no_browser_yet):
    browser.warm_up()
    browser._session.opened.result(timeout=60)  # a real Chromium, up and ready
    no_browser_yet.setattr(browser, "DEADLINE", 0.0)  # no drawing finishes in no time
    with pytest.raises(AuditError, match=r"^the headless browser started but did not finish .* within 0 s") as error:
        browser.figure_image_later(_figure("late"), "svg", 100, 100)()
    assert "needs a working Chrome" not in str(error.value)


def test_a_missing_browser_is_one_error_naming_where_it_was_looked_for(no_browser_yet, tmp_path):
    no_browser_yet.setenv("BROWSER_PATH", str(tmp_path / "no-chrome"))
    with pytest.raises(AuditError, match=r"needs a working Chrome/Chromium .*Browser not found.*no-chrome"):
        browser.evaluate_in(b"<html></html>", "1")


def test_a_printed_page_loads_nothing_but_itself_and_data_uris(tmp_path):
    """Raw hostile HTML (as if an escaping slip let it through): frames and an object onto local files, an image, a
    style sheet and a script from a server on 127.0.0.1. The PDF holds none of the files and the server hears nothing;
    the page's own text and a ``data:`` image are there."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-LOCAL-FILE")
    heard: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            heard.append(self.path)
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    near = f"http://127.0.0.1:{server.server_address[1]}"
    dot = base64.b64encode(b"<svg xmlns='http://www.w3.org/2000/svg' width='20' height='20'/>").decode()
    html = (f"<!DOCTYPE html><html><head><link rel='stylesheet' href='{near}/style.css'>"
            f"<script src='{near}/script.js'></script></head><body><p>the page's own text</p>"
            "<iframe src='file:///etc/passwd' width=600 height=300></iframe>"
            f"<object data='{secret.as_uri()}' type='text/plain' width=600 height=100></object>"
            f"<iframe src='{secret.as_uri()}'></iframe><img src='{near}/pixel.png'>"
            f"<img id=dot src='data:image/svg+xml;base64,{dot}'></body></html>").encode()
    try:
        pdf = tmp_path / "page.pdf"
        pdf.write_bytes(browser.print_pdf(html))
        text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
        assert "the page's own text" in text
        assert "root:" not in text and "/bin/" not in text and "TOP-SECRET" not in text, text
        assert browser.evaluate_in(html, "document.getElementById('dot').naturalWidth") == 20
        assert heard == []
    finally:
        server.shutdown()
        server.server_close()


KILLED = """
import os, signal, threading
from audit.errors import AuditError
from audit.present import browser
browser.print_pdf(b"<html><body>started</body></html>")
pid = browser._session.browser.subprocess.pid
threading.Timer(0.3, lambda: os.killpg(pid, signal.SIGKILL)).start()
page = "<section style='break-after:page'>" + "word " * 3000 + "</section>"
try:
    browser.print_pdf(("<!DOCTYPE html><html><body>" + page * 400 + "</body></html>").encode())
except AuditError as error:
    print(error)
"""


def test_a_browser_killed_mid_print_is_one_line():
    """Its process group killed while it prints a long document: one error saying so (not "invalid state",
    "Executor is closed." or "CancelledError")."""
    done = subprocess.run([sys.executable, "-c", KILLED], capture_output=True, text=True, timeout=120,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["the headless browser ended while it worked (exit status -9: killed or "
                                        "crashed); run the command again"], done.stdout
