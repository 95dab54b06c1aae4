"""A local OpenAI-compatible chat server (127.0.0.1, a thread) that ranks the study's names in the order shown:
the position-biased ranker the listwise tests audit."""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator

from audit.tasks import study
from tests.helpers import serving_in_thread

NAME = "in-order"
DELAY_S = 0.05  # per answer, so that requests sent together are seen together


def shown_names(user: str) -> list[str]:
    """The study's names in the order the prompt shows them (the longest name found in each resume)."""
    known = sorted({n for names in study.materials()["names"].values() for n in names}, key=len, reverse=True)
    return [next(n for n in known if n in chunk) for chunk in user.split(study.SEPARATOR) if chunk.strip()]


class Handler(BaseHTTPRequestHandler):
    """Answers each chat request with the names in the order shown; counts the most requests in flight at once."""

    lock = threading.Lock()
    in_flight = most_in_flight = 0

    def _answer(self, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._answer({"object": "list", "data": [{"id": NAME, "object": "model"}]})

    def do_POST(self) -> None:
        with Handler.lock:
            Handler.in_flight += 1
            Handler.most_in_flight = max(Handler.most_in_flight, Handler.in_flight)
        time.sleep(DELAY_S)
        with Handler.lock:
            Handler.in_flight -= 1
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        names = shown_names(user) if study.SEPARATOR in user else ["yes"]
        text = "\n".join(f"{i}. {name}" for i, name in enumerate(names, start=1))
        self._answer({"model": NAME, "system_fingerprint": "in-order-1",
                      "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]})

    def log_message(self, *args: object) -> None:
        pass


def serving() -> Iterator[str]:
    """Start the server; yields its base URL (``http://127.0.0.1:PORT/v1``) and stops it afterwards."""
    with serving_in_thread(ThreadingHTTPServer(("127.0.0.1", 0), Handler)) as url:
        yield url
