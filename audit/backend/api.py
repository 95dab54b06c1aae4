"""A model served behind an OpenAI-compatible chat API (vLLM, llama.cpp, Ollama, a hosted endpoint).

- pointwise: one request per prompt with ``max_tokens=1`` and ``top_logprobs``; P(y) sums the returned
  next-token probabilities of every single-token spelling of y (``"Yes"``, ``" Yes"``), then is normalised
  over the labels; the raw sum is the label mass. A spelling outside the returned top tokens counts as 0.
- pairwise: greedy generation, parsed by the same code as the local backends.
- The answer prefix ("Answer:") is sent as a final assistant message continued in place
  (``continue_final_message``, ``add_generation_prompt=False``: vLLM's chat extensions), so the model sees the
  same text as with a local backend.

Requests run on a bounded thread pool; 429, 5xx, timeouts and dropped connections are retried with
exponential back-off (or the server's ``Retry-After``) within one deadline per call (:data:`CALL_DEADLINE`, enforced
by shutting the call's sockets when it passes, so a server drip-feeding its headers or body is cut on time): every
socket operation times out after :data:`SOCKET_TIMEOUT`, a body is read in pieces under the deadline and capped at
:data:`MAX_BODY`, and redirects are followed only within the same origin, so the key never reaches another host. A
request budget caps the total. The first call that fails (its deadline spent, say) stops the client: the other calls
in flight are cut at once and queued ones are not sent, so a run ends within one deadline, not one per call; an
optional run deadline (``--deadline``) bounds every call of the run together. The API key is read from the
environment variable the user names, at request time only: it is never stored, logged or shown. The base URL is
recorded without credentials, query or fragment.
"""
from __future__ import annotations

import http.client
import json
import math
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence
from urllib.parse import urlsplit, urlunsplit

from audit.backend.sources import ModelRef
from audit.errors import AuditError
from audit.prompts import ChatPrompt, LabelScores

PREFIX = "openai:"
TOP_LOGPROBS = 20  # the OpenAI maximum; vLLM's default --max-logprobs
RETRIED = {429, 500, 502, 503, 504}
SOCKET_TIMEOUT = 60.0  # seconds one connect or read may block
CALL_DEADLINE = 300.0  # seconds one call may take, its retries and waits included
MAX_BODY = 8 * 2**20  # bytes of one answer


def origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of ``url``; an :class:`AuditError` if it is not a valid URL (a port out of range, an
    unclosed bracket)."""
    try:
        parts = urlsplit(url)
        return parts.scheme, (parts.hostname or "").lower(), parts.port
    except ValueError as exc:
        raise AuditError(f"{url!r} is not a valid URL: {exc}") from None


class SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Follow a redirect only to the same scheme, host and port (the Authorization header goes with it)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001 - urllib's signature
        try:
            target = origin(newurl)
        except AuditError:
            raise AuditError(f"{req.full_url} redirected to {newurl!r}, not a valid URL; refused") from None
        if target != origin(req.full_url):
            raise AuditError(f"{req.full_url} redirected to another origin ({urlsplit(newurl).netloc}); the API key "
                             "is never sent there — use the final URL as --base-url")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_calls = threading.local()  # the current thread's call: (its sockets, whether it was cut), so a deadline can cut it


def _opened(sock: socket.socket) -> None:
    """Note a socket the current thread's call opened; cut it at once where the call was cut before it connected
    (noted first, then checked: :func:`_shut` marks first, then cuts what is noted, so one of the two cuts it)."""
    sockets, fired = getattr(_calls, "call", ([], []))
    sockets.append(sock)
    if fired:
        _shut([sock], [])


class _CutHTTP(http.client.HTTPConnection):
    def connect(self) -> None:
        super().connect()
        _opened(self.sock)


class _CutHTTPS(http.client.HTTPSConnection):
    def connect(self) -> None:
        super().connect()
        _opened(self.sock)


class _DeadlineHTTP(urllib.request.HTTPHandler):
    def http_open(self, req):  # noqa: ANN001 - urllib's signature
        return self.do_open(_CutHTTP, req)


class _DeadlineHTTPS(urllib.request.HTTPSHandler):
    def https_open(self, req):  # noqa: ANN001 - urllib's signature
        return self.do_open(_CutHTTPS, req, context=self._context)


_OPENER = urllib.request.build_opener(SameOriginRedirects, _DeadlineHTTP, _DeadlineHTTPS)


def _shut(sockets: list[socket.socket], fired: list[bool]) -> None:
    """End every socket of a call at its deadline: a blocked connect, header or body read returns at once."""
    fired.append(True)
    for sock in sockets:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def clean_url(url: str) -> str:
    """``url`` without user name, password, query or fragment, and without a trailing slash."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:  # a port out of range, a bracket left open
        raise AuditError(f"--base-url {url!r} is not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise AuditError(f"--base-url must be an http(s) URL such as http://127.0.0.1:8000/v1, got {parts.scheme or 'no'} "
                         "scheme")
    host = (f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname) + (f":{port}" if port else "")
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


class ApiClient:
    """JSON over HTTP with retries, back-off and a request budget; thread-safe."""

    def __init__(self, base_url: str, key_env: str | None, *, retries: int = 4, backoff: float = 0.5,
                 timeout: float = SOCKET_TIMEOUT, max_requests: int | None = None, deadline: float | None = None,
                 run_until: float | None = None):
        self.base_url = clean_url(base_url)
        self.key_env = key_env
        self.retries, self.backoff, self.timeout, self.max_requests = retries, backoff, timeout, max_requests
        self.deadline = CALL_DEADLINE if deadline is None else deadline  # read when built, so tests can shorten it
        self.run_until = run_until  # time.time() at which the whole run must end (--deadline), or None
        self.sent = 0
        self._lock = threading.Lock()
        self._halt = threading.Event()  # set by the first failing call: every other call ends at once
        self._failure: AuditError | None = None
        self._in_flight: list[tuple[list[socket.socket], list[bool]]] = []
        if key_env and not os.environ.get(key_env):
            raise AuditError(f"--api-key-env {key_env}: that environment variable is not set")

    def stop(self, failure: AuditError) -> AuditError:
        """Remember the first failure, cut every call in flight and refuse every later one; the failure to raise."""
        with self._lock:
            if self._failure is None:
                self._failure = failure
            cut, self._in_flight = self._in_flight, []
        self._halt.set()
        for sockets, fired in cut:
            _shut(sockets, fired)
        return self._failure

    def _ends(self) -> float:
        """The monotonic time the next call must end by: its own deadline or the run's, whichever comes first."""
        ends = time.monotonic() + self.deadline
        if self.run_until is not None:
            ends = min(ends, time.monotonic() + self.run_until - time.time())
        return ends

    def _late(self, path: str, problem: str) -> AuditError:
        """The error of a call past its deadline (the run's, when that came first)."""
        if self.run_until is not None and time.time() >= self.run_until - 0.05:
            return AuditError(f"{self.base_url}{path}: the run's deadline (--deadline) passed ({problem}); finished "
                              "batches are stored, rerun to continue")
        return AuditError(f"{self.base_url}{path}: no answer within {self.deadline:g} s (the call's deadline, "
                          f"{problem}); finished batches are stored, rerun to continue")

    def call(self, path: str, body: dict | None = None) -> dict:
        """GET (no body) or POST ``path``; the decoded JSON answer, or one clear AuditError (within the deadline).
        The first call that fails stops this client: later and concurrent calls raise the same error at once."""
        try:
            return self._call(path, body)
        except AuditError as exc:
            raise self.stop(exc) from None

    def _call(self, path: str, body: dict | None) -> dict:
        ends = self._ends()
        for attempt in range(self.retries + 1):
            if self._failure is not None:
                raise self._failure
            if time.monotonic() >= ends:
                raise self._late(path, f"{attempt} tries")
            self._spend()
            wait = self.backoff * 2 ** attempt
            try:
                return self._once(path, body, ends)
            except urllib.error.HTTPError as exc:
                if exc.code not in RETRIED or attempt == self.retries:
                    raise self._refusal(exc) from None
                problem = f"HTTP {exc.code}"
                wait = max(wait, retry_after(exc.headers.get("Retry-After")))
            except (urllib.error.URLError, socket.timeout, ConnectionError, TimeoutError,
                    http.client.HTTPException) as exc:
                problem = self.scrub(str(getattr(exc, "reason", exc)) or type(exc).__name__)
                if attempt == self.retries:
                    raise AuditError(f"cannot reach {self.base_url}{path} after {attempt + 1} tries: {problem}") from None
            if time.monotonic() + wait > ends:
                raise self._late(path, f"{attempt + 1} tries, last: {problem}")
            if self._halt.wait(wait) and self._failure is not None:
                raise self._failure
        raise AssertionError("unreachable")  # the loop returns or raises

    def _spend(self) -> None:
        with self._lock:
            if self.max_requests is not None and self.sent >= self.max_requests:
                raise AuditError(f"request budget of {self.max_requests} spent; finished batches are stored, "
                                 "rerun (with a larger --max-requests) to continue")
            self.sent += 1

    def _once(self, path: str, body: dict | None, ends: float) -> dict:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.key_env:
            headers["Authorization"] = "Bearer " + os.environ.get(self.key_env, "")
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base_url + path, data=data, headers=headers)
        timeout = max(0.1, min(self.timeout, ends - time.monotonic()))
        sockets: list[socket.socket] = []
        fired: list[bool] = []
        call = (sockets, fired)
        _calls.call = call
        with self._lock:
            if self._failure is not None:  # stopped since this call's last look
                raise self._failure
            self._in_flight.append(call)
        timer = threading.Timer(max(0.0, ends - time.monotonic()), _shut, (sockets, fired))
        timer.daemon = True
        timer.start()
        try:
            with _OPENER.open(request, timeout=timeout) as answer:
                raw = read_within(answer, ends, f"{self.base_url}{path}")
        except (OSError, http.client.HTTPException, AuditError):
            if self._failure is not None:  # another call failed and cut this one
                raise self._failure from None
            if fired:  # the deadline cut the socket: say so, whatever the cut surfaced as
                raise self._late(path, "a slow answer included") from None
            raise
        except ValueError as exc:  # urllib parsing a redirect's Location: a port out of range, a bracket left open
            raise AuditError(f"{self.base_url}{path} redirected to a URL that is not valid ({exc}); refused") from None
        finally:
            timer.cancel()
            _calls.call = ([], [])
            with self._lock:
                self._in_flight = [other for other in self._in_flight if other is not call]
        if self._failure is not None:
            raise self._failure
        if fired:
            raise self._late(path, "a slow answer included")
        try:
            decoded = json.loads(raw)
        except ValueError:
            raise AuditError(f"{self.base_url}{path} did not answer JSON; is it an OpenAI-compatible API?") from None
        if not isinstance(decoded, dict):
            raise AuditError(f"{self.base_url}{path} answered {type(decoded).__name__} JSON, not an object")
        return decoded

    def scrub(self, text: str) -> str:
        """``text`` with the API key, if any, replaced by ``***``."""
        key = os.environ.get(self.key_env or "", "")
        return text.replace(key, "***") if key else text

    def _refusal(self, exc: urllib.error.HTTPError) -> AuditError:
        if exc.code in (401, 403):
            how = f"check {self.key_env}" if self.key_env else "pass --api-key-env VAR naming a variable that holds it"
            return AuditError(f"{self.base_url} refused the API key (HTTP {exc.code}); {how}")
        try:
            detail = json.loads(exc.read()).get("error", {})
            message = detail.get("message", "") if isinstance(detail, dict) else str(detail)
        except (ValueError, AttributeError):
            message = ""
        first = message.splitlines()[0][:200] if message else exc.reason
        return AuditError(self.scrub(f"{self.base_url} answered HTTP {exc.code}: {first}"))


def retry_after(value: str | None) -> float:
    """Seconds a ``Retry-After`` header asks to wait (0 when absent or a date)."""
    try:
        return max(0.0, float(value)) if value else 0.0
    except ValueError:
        return 0.0


def read_within(answer: Any, ends: float, where: str) -> bytes:
    """The body of ``answer`` read in pieces, refused past :data:`MAX_BODY` bytes or the deadline ``ends``."""
    pieces, size = [], 0
    while piece := answer.read1(65536) if hasattr(answer, "read1") else answer.read(65536):
        pieces.append(piece)
        size += len(piece)
        if size > MAX_BODY:
            raise AuditError(f"{where} answered more than {MAX_BODY // 2**20} MiB; refused")
        if time.monotonic() > ends:
            raise AuditError(f"{where}: the answer did not finish within the call's deadline")
    expected = answer.headers.get("Content-Length")
    if expected and expected.isdigit() and size < int(expected):
        raise AuditError(f"{where}: the answer was cut off ({size} of {expected} bytes)")
    return b"".join(pieces)


ALLOWED_KEYS = "AUDIT_API_KEY_ENVS"
"""The dashboard's operator lists here the key variables its users may name: ``NAME`` or ``NAME=ORIGIN`` (that key
is sent only to that origin, e.g. ``OPENAI_API_KEY=https://api.openai.com``), comma-separated."""


def dashboard_key_env(key_env: str, base_url: str) -> str | None:
    """``key_env`` if the operator allows a dashboard user to send it to ``base_url``; else one clear error. Without
    this, a user could name any secret of the server process and have it sent to a host of their choosing."""
    if not key_env:
        return None
    allowed: dict[str, str | None] = {}
    for entry in filter(None, (e.strip() for e in os.environ.get(ALLOWED_KEYS, "").split(","))):
        name, _, where = entry.partition("=")
        allowed[name.strip()] = where.strip() or None
    if key_env not in allowed:
        listed = ", ".join(sorted(allowed)) or "none are listed"
        raise AuditError(f"API key variable {key_env!r} is not one the dashboard's operator allows ({ALLOWED_KEYS}: "
                         f"{listed})")
    if allowed[key_env] and origin(clean_url(base_url)) != origin(clean_url(allowed[key_env])):
        raise AuditError(f"API key variable {key_env!r} may only be sent to {allowed[key_env]}")
    return key_env


def served_models(client: ApiClient) -> list[str]:
    """The ids ``/models`` lists; a malformed list is one clear error."""
    data = client.call("/models").get("data")
    if not isinstance(data, list) or not all(isinstance(e, dict) and isinstance(e.get("id"), str) for e in data):
        raise AuditError(f"{client.base_url}/models answered no model list (expected data: [{{id: ...}}, ...])")
    return [entry["id"] for entry in data]


def message_text(answer: dict, where: str) -> str:
    """The text of the first choice of a chat answer; a malformed answer is one clear error."""
    try:
        content = answer["choices"][0]["message"].get("content")
    except (KeyError, IndexError, TypeError, AttributeError):
        raise AuditError(f"{where} answered without choices[0].message; is it an OpenAI-compatible chat API?") from None
    if content is not None and not isinstance(content, str):
        raise AuditError(f"{where} answered a message whose content is not text")
    return content or ""


def chat_body(model: str, prompt: ChatPrompt, **options: Any) -> dict:
    """A chat request for ``prompt`` whose answer continues the answer prefix in the assistant turn."""
    messages = [{"role": "system", "content": prompt.system}, {"role": "user", "content": prompt.user}]
    extra: dict[str, Any] = {}
    if prompt.answer_prefix:
        messages.append({"role": "assistant", "content": prompt.answer_prefix})
        extra = {"continue_final_message": True, "add_generation_prompt": False}
    return {"model": model, "messages": messages, "temperature": 0.0, **extra, **options}


def top_logprobs(answer: dict) -> list[dict] | None:
    """The first generated token's top alternatives (``[{token, logprob}, …]``), or None when absent."""
    try:
        content = answer["choices"][0]["logprobs"]["content"]
        return content[0]["top_logprobs"] or None
    except (KeyError, IndexError, TypeError):
        return None


def check_alternatives(where: str, top: object) -> None:
    """Top alternatives must be a list of ``{token: text, logprob: number}``; anything else is one clear error."""
    if not isinstance(top, list) or not all(
            isinstance(t, dict) and isinstance(t.get("token"), str) and isinstance(t.get("logprob"), (int, float))
            and not isinstance(t.get("logprob"), bool) for t in top):
        sample = json.dumps(top)[:120] if isinstance(top, (list, dict)) else repr(top)[:120]
        raise AuditError(f"{where} returned malformed log-probabilities (each alternative needs a text 'token' and "
                         f"a numeric 'logprob'): {sample}")


def api_ref(model: str, base_url: str | None, key_env: str | None = None, *, need_logprobs: bool = True,
            client: ApiClient | None = None, run_until: float | None = None) -> ModelRef:
    """Check that the endpoint serves ``openai:NAME`` (and returns log-probabilities when pointwise needs them);
    the reference keyed by endpoint + served model id + the server's reported fingerprint."""
    name = model.removeprefix(PREFIX)
    if not base_url:
        raise AuditError(f"--model {PREFIX}{name} needs --base-url (e.g. http://127.0.0.1:8000/v1)")
    if not name:
        raise AuditError(f"--model {PREFIX}NAME needs the served model's name")
    client = client or ApiClient(base_url, key_env, retries=1, run_until=run_until)
    served = served_models(client)
    if name not in served:
        raise AuditError(f"{client.base_url} does not serve {name!r}; it serves {served}")
    asked = {"logprobs": True, "top_logprobs": TOP_LOGPROBS} if need_logprobs else {}
    no_logprobs = (f"{client.base_url} returns no log-probabilities for {name!r}, so pointwise scores cannot be "
                   "computed; use --mode pairwise --pairwise-mode generate")
    try:
        probe = client.call("/chat/completions", chat_body(name, ChatPrompt("You answer.", "Say yes."), max_tokens=1,
                                                           **asked))
    except AuditError as exc:  # e.g. vLLM started with --max-logprobs 0 refuses the request (HTTP 400)
        if need_logprobs and "HTTP 400" in str(exc) and "logprobs" in str(exc):
            raise AuditError(f"{no_logprobs} (the server refused them: {str(exc).split(': ', 1)[-1]})") from None
        raise
    if need_logprobs and top_logprobs(probe) is None:
        raise AuditError(no_logprobs)
    served_id = probe.get("model") or name
    server = probe.get("system_fingerprint") or ""
    content = "|".join((client.base_url, served_id, server))
    return ModelRef(PREFIX + name, "api", client.base_url, content, "none", "server", "remote", runtime="openai")


class ApiBackend:
    """The scoring operations and sampling over an OpenAI-compatible endpoint; it does not offer
    :class:`~audit.backend.protocol.OptionScoring` (likelihood readings) or
    :class:`~audit.backend.protocol.Tokenizing`."""

    def __init__(self, ref: ModelRef, key_env: str | None = None, *, concurrency: int = 4, retries: int = 4,
                 max_requests: int | None = None, backoff: float = 0.5, run_until: float | None = None):
        if concurrency < 1:
            raise AuditError(f"--concurrency must be positive, got {concurrency}")
        self.ref = ref
        self.name = ref.label.removeprefix(PREFIX)
        self.concurrency = concurrency
        self.tokenizer = None  # no local tokenizer: prompts go as chat messages
        self.client = ApiClient(ref.location, key_env, retries=retries, max_requests=max_requests, backoff=backoff,
                                run_until=run_until)

    def _map(self, body: Callable[[ChatPrompt], dict], prompts: Sequence[ChatPrompt],
             read: Callable[[dict], Any]) -> list:
        """``read`` of the chat completion of ``body(p)`` for every prompt; an answer ``read`` refuses stops the
        client at once (as a failed call does), so no more requests are sent for answers that would be refused."""
        def one(prompt: ChatPrompt) -> Any:
            answer = self.client.call("/chat/completions", body(prompt))
            try:
                return read(answer)
            except AuditError as exc:
                raise self.client.stop(exc) from None

        return self._pooled(one, prompts)

    def _pooled(self, one: Callable[[Any], Any], items: Sequence[Any]) -> list:
        """``one`` of every item, :attr:`concurrency` at a time; an interruption (Ctrl-C) cuts the calls in flight
        and sends no more, so the pool closes at once instead of at the calls' deadline."""
        with ThreadPoolExecutor(self.concurrency) as pool:
            try:
                return list(pool.map(one, items))
            except BaseException:
                self.client.stop(AuditError("interrupted"))
                raise

    def label_probabilities(self, prompts: Sequence[ChatPrompt], labels: Sequence[str]) -> list[LabelScores]:
        """P(y) for each label y summed over its single-token spellings among the top tokens, normalised."""
        def read(answer: dict) -> LabelScores:
            top = top_logprobs(answer)
            if top is None:
                raise AuditError(f"{self.ref.location} returned no log-probabilities; use --mode pairwise "
                                 "--pairwise-mode generate")
            check_alternatives(self.ref.location, top)
            return LabelScores.from_masses([sum(math.exp(t["logprob"]) for t in top
                                                if t["token"] in (label, " " + label)) for label in labels])

        return self._map(lambda p: chat_body(self.name, p, max_tokens=1, logprobs=True, top_logprobs=TOP_LOGPROBS),
                         prompts, read)

    def generate(self, prompts: Sequence[ChatPrompt], *, max_new_tokens: int = 16) -> list[str]:
        """Greedy answers; the first token may not end the turn (``min_tokens=1``, as with local backends)."""
        return self._map(lambda p: chat_body(self.name, p, max_tokens=max_new_tokens, min_tokens=1,
                                             skip_special_tokens=True), prompts,
                         lambda answer: message_text(answer, self.ref.location).strip())

    def sample(self, prompts: Sequence[str | ChatPrompt], seeds: Sequence[int], *, max_new_tokens: int = 20,
               min_new_tokens: int = 1, temperature: float = 1.0, top_p: float = 1.0) -> list[str]:
        """Sampled continuations (CAIRO) with the server's ``seed``; a ``str`` is continued as plain text
        (``/completions``), a :class:`ChatPrompt` through the chat API."""
        if len(seeds) != len(prompts):
            raise AuditError(f"sample() needs one seed per prompt, got {len(seeds)} seeds for {len(prompts)} prompts")
        options = {"max_tokens": max_new_tokens, "min_tokens": min_new_tokens, "temperature": temperature,
                   "top_p": top_p, "skip_special_tokens": True}

        def one(item: tuple[str | ChatPrompt, int]) -> str:
            prompt, seed = item
            if isinstance(prompt, ChatPrompt):
                answer = self.client.call("/chat/completions", chat_body(self.name, prompt, seed=seed, **options))
                return message_text(answer, self.ref.location)
            body = {"model": self.name, "prompt": prompt, "seed": seed, **options}
            try:
                return str(self.client.call("/completions", body)["choices"][0].get("text") or "")
            except (KeyError, IndexError, TypeError, AttributeError):
                raise AuditError(f"{self.ref.location}/completions answered without choices[0].text") from None

        return self._pooled(one, list(zip(prompts, seeds)))
