"""A real OpenAI-compatible chat server on 127.0.0.1 over the project's transformers backend (test fixture).

It speaks the subset the API backend uses: ``GET /v1/models`` and ``POST /v1/chat/completions`` with
``logprobs``/``top_logprobs``, ``max_tokens``, ``min_tokens`` and ``continue_final_message``. Flags make it
misbehave the ways a deployment can: ``--key-env VAR`` (demand the key in VAR), ``--no-logprobs`` (an endpoint that
returns none), ``--logprob VALUE`` (every log-probability replaced by VALUE, e.g. ``inf``, ``5`` or ``abc``).
"""
from __future__ import annotations

import argparse
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

from audit.backend import CausalLM, resolve
from audit.tasks.base import ChatPrompt

NAME = "smollm2-135m"


def garbage(value: str) -> float | str:
    """``value`` as the number it spells (``inf`` is sent as JSON ``Infinity``), else as text."""
    try:
        return float(value)
    except ValueError:
        return value


def serve(port: int, key_env: str | None, logprobs: bool, logprob: str | None = None) -> None:
    server = make_server(port, os.environ[key_env] if key_env else None, logprobs, logprob,
                         CausalLM.load(resolve(NAME), batch_size=1))  # one request at a time, in the main thread
    print("ready", flush=True)
    server.serve_forever()


def make_server(port: int, key: str | None, logprobs: bool, logprob: str | None, lm: CausalLM, *,
                die_after: int | None = None) -> HTTPServer:
    """The server on 127.0.0.1:``port`` (0: any free port) over ``lm``, demanding ``key`` when one is given, not yet
    serving (tests/served.py also runs it in a thread of the test process, over the session's loaded model).

    ``die_after``: the server dies the way a killed one does once it has answered that many different requests (a
    client's retry of one it answered is answered again): the next new request gets no answer (its connection is
    dropped) and the port is closed (later requests are refused)."""
    answered: set[str] = set()

    def complete(body: dict) -> dict:
        messages = {m["role"]: m["content"] for m in body["messages"]}
        prompt = ChatPrompt(messages.get("system", ""), messages["user"], messages.get("assistant", ""))
        if body.get("logprobs") and body.get("max_tokens") == 1:
            row = lm._tail_logprobs([prompt], [[]], tail=1)[0][-1]
            values, ids = row.topk(int(body.get("top_logprobs", 1)))
            top = [{"token": lm.tokenizer.decode([int(i)]), "logprob": float(v) if logprob is None else garbage(logprob)}
                   for v, i in zip(values, ids)]
            text = top[0]["token"]
        else:
            text, top = lm.generate([prompt], max_new_tokens=int(body.get("max_tokens", 16)))[0], []
        content = [{"token": text, "logprob": 0.0, "top_logprobs": top}] if logprobs and top else None
        return {"model": NAME, "system_fingerprint": "test-server-1", "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text},
             "logprobs": {"content": content} if content else None}]}

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, code: int, payload: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _authorised(self) -> bool:
            if key and self.headers.get("Authorization") != f"Bearer {key}":
                self._answer(401, {"error": {"message": "Incorrect API key provided"}})
                return False
            return True

        def do_GET(self) -> None:
            if self._authorised():
                self._answer(200, {"object": "list", "data": [{"id": NAME, "object": "model"}]})

        def do_POST(self) -> None:
            if not self._authorised():
                return
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            request = json.dumps(body, sort_keys=True)
            if die_after is not None and request not in answered and len(answered) >= die_after:
                self.close_connection = True  # dropped, unanswered; the port closes once this handler returns
                threading.Thread(target=lambda: (server.shutdown(), server.server_close()), daemon=True).start()
                return
            answered.add(request)
            if body.get("model") != NAME:
                self._answer(404, {"error": {"message": f"The model `{body.get('model')}` does not exist."}})
                return
            self._answer(200, complete(body))

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", port), Handler)  # one request at a time
    return server


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--key-env")
    parser.add_argument("--no-logprobs", action="store_true")
    parser.add_argument("--logprob")
    args = parser.parse_args()
    serve(args.port, args.key_env, not args.no_logprobs, args.logprob)
