"""The process's one headless Chromium (Debian: ``apt-get install chromium``; ``BROWSER_PATH`` names another), driven
through the DevTools protocol (choreographer) on an event loop of its own thread. It draws Plotly figures as SVG,
PNG or PDF in one tab that loaded plotly.js once, and prints HTML documents to PDF and measures their layout, each in
a tab of its own.

The browser starts on first use, or early and in the background with :func:`warm_up`. Every call waits at most
:data:`DEADLINE` seconds, the browser's start included; a browser that fails or does not answer in time is killed
with its whole process group, and every later call raises the same error at once."""
from __future__ import annotations

import asyncio
import atexit
import base64
import json
import logging
import os
import signal
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from audit.errors import AuditError

DEADLINE = 45.0
"""Seconds one call may take, the browser's start included."""
_T = TypeVar("_T")

#: defined in the drawing tab once plotly.js is loaded: a figure (JSON) as image data (SVG text, PNG base64)
_DRAW = """window.drawFigure = (figure, format, width, height, scale) => Plotly.toImage(
  {data: figure.data || [], layout: figure.layout || {}, config: Object.assign({plotGlPixelRatio: 2 * scale},
   figure.config)}, {format: format, width: width, height: height, scale: scale, imageDataOnly: true});"""


class PageError(AuditError):
    """A page's script failed (a figure plotly.js cannot draw): that call fails, the browser stays up."""


class _Session:
    """One browser with its drawing tab, opened on the loop of a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.loop.set_exception_handler(_unheard)  # a failing browser's errors reach the callers through their futures
        threading.Thread(target=self.loop.run_forever, name="browser", daemon=True).start()
        self.folder = tempfile.TemporaryDirectory(prefix="audit-browser-", ignore_cleanup_errors=True)
        self.browser: Any = None
        self.opened = self.submit(self._open())

    def submit(self, work: Awaitable[_T]) -> Future[_T]:
        return asyncio.run_coroutine_threadsafe(work, self.loop)

    async def _open(self) -> None:
        import choreographer
        from plotly.offline import get_plotlyjs

        logging.getLogger("choreographer").setLevel(logging.ERROR)  # its watchdog's warnings are not ours to print
        self.browser = choreographer.Browser(headless=True, browser_cls=_guarded_chromium())
        await self.browser.open()
        self.drawing_lock = asyncio.Lock()
        self.drawing = self.browser.get_tab()
        blank = Path(self.folder.name) / "drawing.html"
        blank.write_text("<!DOCTYPE html><html><head><meta charset='utf-8'></head><body></body></html>")
        await _load(self.drawing, blank)
        await _evaluate(self.drawing, get_plotlyjs() + ";" + _DRAW)
        await _evaluate(self.drawing, "drawFigure({}, 'svg', 10, 10, 1)")  # compiles plotly's drawing code once

    async def image(self, figure_json: str, fmt: str, width: int, height: int, scale: float) -> bytes:
        """The figure as ``svg``, ``png`` or ``pdf`` bytes (see :func:`figure_image_later`)."""
        await asyncio.wrap_future(self.opened)
        drawn = json.dumps("png" if fmt == "png" else "svg")
        async with self.drawing_lock:
            data = await _evaluate(self.drawing, f"drawFigure({figure_json}, {drawn}, {width}, {height}, {scale})")
        if fmt == "png":
            return base64.b64decode(data)
        if fmt == "svg":
            return data.encode("utf-8")
        return await self.in_page(_figure_page(data, width, height), _printed)

    async def in_page(self, html: bytes, work: Callable[[Any], Awaitable[_T]]) -> _T:
        """``work(tab)`` on a new tab showing ``html`` once it has loaded (its images decoded), the tab closed after."""
        await asyncio.wrap_future(self.opened)
        handle, name = tempfile.mkstemp(suffix=".html", dir=self.folder.name)
        os.close(handle)
        page = Path(name)
        page.write_bytes(html)
        tab = await self.browser.create_tab("")
        try:
            await _load(tab, page)
            return await work(tab)
        finally:
            await self.browser.close_tab(tab.target_id)
            page.unlink(missing_ok=True)

    def kill(self) -> None:
        """End the browser with its process group (it was started in a session of its own)."""
        process = getattr(self.browser, "subprocess", None)
        if process is not None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass  # already gone
        self.folder.cleanup()


_lock = threading.Lock()
_session: _Session | None = None
_broken: str | None = None


def warm_up() -> None:
    """Start the browser now, in the background, so that it is up when it is first needed (once per process; a
    browser that fails to start fails the first call)."""
    _started()


def figure_image_later(figure_json: str, fmt: str, width: int, height: int, scale: float = 1
                       ) -> Callable[[], bytes]:
    """A Plotly figure (its JSON) as ``svg``, ``png`` (``scale`` × the size in pixels) or ``pdf`` (one page of the
    figure's size), drawn while the caller goes on: the function returned waits for the bytes."""
    return _later(lambda session: session.image(figure_json, fmt, width, height, scale))


def print_pdf(html: bytes) -> bytes:
    """``html`` (a self-contained document) printed to PDF bytes, pages sized by its CSS ``@page``, without header
    or footer."""
    return _later(lambda session: session.in_page(html, _printed))()


def evaluate_in(html: bytes, script: str) -> Any:
    """The JSON value of ``script`` (an expression) run in ``html`` once the page has loaded."""
    return _later(lambda session: session.in_page(html, lambda tab: _evaluate(tab, script)))()


def _started() -> _Session:
    global _session
    with _lock:
        if _broken:
            raise AuditError(_broken)
        if _session is None:
            _session = _Session()
            atexit.register(_session.kill)
        return _session


def _later(work: Callable[[_Session], Awaitable[_T]]) -> Callable[[], _T]:
    """``work(session)`` started on the browser's loop now; the function returned waits for its result, at most
    until :data:`DEADLINE` after this start (a browser that fails or does not answer is killed, see :func:`_fail`)."""
    session = _started()
    future = session.submit(work(session))
    deadline = time.monotonic() + DEADLINE

    def result() -> _T:
        try:
            return future.result(timeout=max(0.0, deadline - time.monotonic()))
        except PageError:
            raise
        except FutureTimeout:
            future.cancel()
            cause = f"no answer within {DEADLINE:.0f} s"
        except Exception as exc:  # noqa: BLE001 - choreographer raises several types when Chrome is missing or fails
            said = " ".join(str(part) for part in exc.args)  # choreographer's errors hold several sentences
            cause = said.splitlines()[0] if said.strip() else type(exc).__name__
        opened = session.opened.done() and not session.opened.cancelled() and session.opened.exception() is None
        status = _exit_status(session)
        if status is not None and opened:
            _fail(session, f"the headless browser ended while it worked (exit status {status}: killed or crashed); "
                           "run the command again")
        if opened and cause.startswith("no answer"):
            _fail(session, f"the headless browser started but did not finish its drawing or printing within "
                           f"{DEADLINE:.0f} s (a busy machine or a very large document); run the command again")
        _fail(session, "the headless browser needs a working Chrome/Chromium (apt-get install chromium; "
                       f"BROWSER_PATH): {cause}")

    return result


def _exit_status(session: _Session) -> int | None:
    """The browser process's exit status once it has ended (negative: the signal that ended it), else None."""
    process = getattr(session.browser, "subprocess", None)
    return process.poll() if process is not None else None


def _fail(session: _Session, message: str) -> NoReturn:
    """Kill the browser and keep why (``message``), for every later call."""
    global _broken
    with _lock:
        _broken = message
        session.kill()
    raise AuditError(_broken)


def _guarded_chromium() -> type:
    """choreographer's Chromium without the two switches it adds that lift the same-origin rules: the pages shown are
    the tool's own documents, which hold user text, and need neither."""
    from choreographer.browsers.chromium import Chromium

    class Guarded(Chromium):
        def get_cli(self) -> list[str]:
            return [flag for flag in super().get_cli() if flag not in _LIFTED]

    return Guarded


_LIFTED = ("--disable-web-security", "--allow-file-access-from-files")


def _unheard(loop: asyncio.AbstractEventLoop, context: dict) -> None:
    """The browser loop's unhandled errors (the tasks of a browser already killed), logged at debug level only."""
    logging.getLogger(__name__).debug("browser loop: %s", context.get("message"), exc_info=context.get("exception"))


def _figure_page(svg: str, width: int, height: int) -> bytes:
    """A page of exactly ``width`` × ``height`` CSS pixels showing ``svg``."""
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    style = f"@page{{size:{width}px {height}px;margin:0}}body{{margin:0}}img{{display:block}}"
    return (f"<!DOCTYPE html><html><head><style>{style}</style></head><body><img width={width} height={height} "
            f"src='data:image/svg+xml;base64,{data}'></body></html>").encode("utf-8")


async def _load(tab: Any, page: Path) -> None:
    """``tab`` showing ``page`` once its load event has fired; the page loads nothing but itself (:func:`_confine`)."""
    await _confine(tab, page.as_uri())
    _answer(await tab.send_command("Page.enable"))
    loaded = tab.subscribe_once("Page.loadEventFired")
    _answer(await tab.send_command("Page.navigate", params={"url": page.as_uri()}))
    await loaded


async def _confine(tab: Any, page: str) -> None:
    """Every request of ``tab`` (its frames', images', styles', scripts') held by the DevTools protocol's request
    interception: the one to ``page`` goes on, every other file and network request fails (``data:`` URIs make no
    request). The documents shown hold user text: one escaping slip must not become a file read or a request."""
    async def paused(event: dict) -> None:
        params = event["params"]
        allowed = params["request"]["url"] == page
        command = "Fetch.continueRequest" if allowed else "Fetch.failRequest"
        extra = {} if allowed else {"errorReason": "BlockedByClient"}
        await tab.send_command(command, params={"requestId": params["requestId"], **extra})

    tab.subscribe("Fetch.requestPaused", paused)
    _answer(await tab.send_command("Fetch.enable", params={"patterns": [{"urlPattern": "*"}]}))


async def _printed(tab: Any) -> bytes:
    """``tab`` printed to PDF: pages sized by its CSS ``@page``, backgrounds kept, no header or footer."""
    params = {"printBackground": True, "preferCSSPageSize": True, "displayHeaderFooter": False}
    return base64.b64decode(_answer(await tab.send_command("Page.printToPDF", params=params))["data"])


async def _evaluate(tab: Any, expression: str) -> Any:
    """The value of ``expression`` in ``tab`` (a promise awaited); a PageError with the script's own message."""
    answer = _answer(await tab.send_command("Runtime.evaluate", params={
        "expression": expression, "awaitPromise": True, "returnByValue": True}))
    if "exceptionDetails" in answer:
        details = answer["exceptionDetails"]
        message = details.get("exception", {}).get("description") or details.get("text")
        raise PageError(f"the browser could not run the page's script: {str(message).splitlines()[0]}")
    return answer["result"].get("value")


def _answer(response: dict) -> dict:
    """A DevTools answer's result, or an AuditError with its error."""
    if "error" in response:
        raise AuditError(f"the browser refused a command: {response['error'].get('message', response['error'])}")
    return response.get("result", {})
