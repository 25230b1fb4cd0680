"""A scripted HTTP server that speaks the OpenAI, Anthropic and Gemini wire formats, on 127.0.0.1.

It answers the documented endpoints (``POST /v1/chat/completions``, ``POST /v1/messages``,
``POST /v1beta/models/{model}:generateContent``) with bodies shaped like the providers' API references, so
the official SDKs run unchanged against it. Each request takes the next scripted :class:`Action` (or, when
the script is empty, the default answer from ``responder``): a normal answer, an HTTP error with
``Retry-After``, a delay (for timeouts and latency), a dropped connection, an invalid-JSON answer or a refusal.

A request for next-token log probabilities (OpenAI ``logprobs``/``top_logprobs``, Gemini ``responseLogprobs``/
``logprobs``) is answered from a ``{token: probability}`` distribution (``Action.answer(dist)``, else the ``logprobs``
responder): its most likely token is the text, and the logprob fields are shaped as the providers send them. With
no distribution the server acts as one without logprobs: OpenAI's ``"logprobs": null``, Gemini's HTTP 400.

The server is strict: a request a provider would reject for its model (a parameter the model family does not take,
logprobs where the model has none, a schema feature the provider refuses) is answered with that provider's own
error, by the table in :mod:`hf_rgda.testing.constraints` (``docs/providers.md``).

Example:
    >>> server = ProviderServer(lambda messages, schema: {"ok": True}).start()
    >>> server.push(Action.error(429, retry_after=1), Action.answer())
    >>> server.url("openai")  # doctest: +ELLIPSIS
    'http://127.0.0.1:.../v1'
    >>> server.stop()
"""

from __future__ import annotations

import collections
import json
import math
import re
import socket
import threading
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .constraints import violation

__all__ = ["Action", "ProviderServer", "Request"]

Responder = Callable[[list[dict[str, str]], Any], Any]
LogprobResponder = Callable[[list[dict[str, str]]], Mapping[str, float]]


@dataclass(frozen=True)
class Action:
    """What the server does with one request."""

    kind: str = "answer"  # answer | text | error | drop | refusal
    payload: Any = None  # answer: the JSON object, or {token: p} to a logprob request (None: ask); text: the raw text
    status: int = 200
    retry_after: float | None = None
    delay: float = 0.0  # seconds to wait before acting (a timeout when longer than the client's)

    @classmethod
    def answer(cls, payload: Any = None, *, delay: float = 0.0) -> Action:
        return cls("answer", payload, delay=delay)

    @classmethod
    def text(cls, text: str) -> Action:
        """Answer with raw text where JSON is expected (invalid JSON)."""
        return cls("text", text)

    @classmethod
    def error(cls, status: int, *, retry_after: float | None = None, message: str = "") -> Action:
        return cls("error", message or f"scripted HTTP {status}", status=status, retry_after=retry_after)

    @classmethod
    def drop(cls) -> Action:
        """Close the connection without answering."""
        return cls("drop")

    @classmethod
    def refusal(cls) -> Action:
        return cls("refusal")


@dataclass
class Request:
    """One request the server received."""

    provider: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    messages: list[dict[str, str]] = field(default_factory=list)
    schema: Any = None


class ProviderServer:
    """The scripted server.

    Args:
        responder: ``responder(messages, schema)`` -> the JSON object a model would answer, used for unscripted
            requests and for ``Action.answer()`` without a payload.
        latency: seconds added to every request (an honest stand-in for a remote API's latency).
        keys: accepted API keys; None accepts any key, a set rejects others with 401 (echoing the key, as some
            providers do, so redaction is tested).
        logprobs: ``logprobs(messages)`` -> ``{token: probability}`` of the next token, for logprob requests
            without a scripted distribution; None: a server without logprobs.
    """

    def __init__(self, responder: Responder, *, latency: float = 0.0, keys: set[str] | None = None,
                 logprobs: LogprobResponder | None = None) -> None:
        self.responder, self.latency, self.keys, self.logprobs = responder, latency, keys, logprobs
        self.script: collections.deque[Action] = collections.deque()
        self.requests: list[Request] = []
        self._seen_prefixes: set[str] = set()
        self._lock = threading.Lock()
        # (monotonic time, +1 request arrived / -1 its latency is over and the answer goes out), to merge servers;
        # the end is taken before the answer is written, so a client's next request cannot overlap it spuriously
        self.events: list[tuple[float, int]] = []
        self._httpd: ThreadingHTTPServer | None = None

    # ---------------------------------------------------------------- lifecycle
    def start(self) -> ProviderServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out as separate writes: no 40 ms delayed-ACK stall

            def do_POST(self) -> None:
                with server._lock:
                    server.events.append((time.monotonic(), 1))
                server._handle(self)

            def log_message(self, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            request_queue_size = 256  # many clients connect at once under concurrency tests
            daemon_threads = True

        self._httpd = Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> ProviderServer:  # noqa: PYI034 (typing.Self needs 3.11)
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    def url(self, provider: str) -> str:
        """The ``base_url`` an SDK client needs for ``provider``."""
        root = f"http://127.0.0.1:{self.port}"
        return root + "/v1" if provider == "openai" else root

    def push(self, *actions: Action) -> None:
        with self._lock:
            self.script.extend(actions)

    # ---------------------------------------------------------------- request handling
    def _next(self) -> Action:
        with self._lock:
            return self.script.popleft() if self.script else Action.answer()

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        raw = h.rfile.read(int(h.headers.get("Content-Length") or 0))
        body = json.loads(raw or b"{}")
        provider, model = _route(h.path)
        req = Request(provider, h.path, {k.lower(): v for k, v in h.headers.items()}, body)
        req.messages, req.schema = _read(provider, body)
        with self._lock:
            self.requests.append(req)
        action = self._next()
        if self.latency or action.delay:
            time.sleep(self.latency + action.delay)
        with self._lock:
            self.events.append((time.monotonic(), -1))
        if provider == "unknown":
            return _send(h, 404, {"error": {"message": f"no route {h.path}"}})
        key = req.headers.get("authorization", "").removeprefix("Bearer ") or req.headers.get("x-api-key") \
            or req.headers.get("x-goog-api-key", "")
        if self.keys is not None and key not in self.keys:
            if provider == "gemini":  # Gemini answers a bad key with 400 API_KEY_INVALID
                return _send(h, 400, {"error": {"code": 400, "status": "INVALID_ARGUMENT",
                                                "message": f"API key not valid. Please pass a valid API key. ({key})",
                                                "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                                             "reason": "API_KEY_INVALID"}]}})
            return _send(h, 401, _error(provider, 401, f"Incorrect API key provided: {key}"))
        bad = violation(provider, model or str(req.body.get("model", "")), req.body)
        if bad is not None:
            return _send(h, *bad)
        if action.kind == "drop":
            h.connection.shutdown(socket.SHUT_RDWR)
            h.close_connection = True
            return None
        if action.kind == "error":
            headers = {"Retry-After": _num(action.retry_after)} if action.retry_after is not None else {}
            return _send(h, action.status, _error(provider, action.status, str(action.payload)), headers)
        cached = self._cached_tokens(provider, req)
        if action.kind == "refusal":
            return _send(h, 200, _refusal(provider, model))
        if action.kind == "text":
            return _send(h, 200, _answer(provider, model, str(action.payload), req, cached, structured=False))
        if _wants_logprobs(provider, req.body):
            dist = action.payload if action.payload is not None else self.logprobs and self.logprobs(req.messages)
            if dist:
                return _send(h, 200, _logprob_answer(provider, model, dist, req, cached))
            if provider == "gemini":
                return _send(h, 400, _error(provider, 400, f"Logprobs is not enabled for models/{model}"))
        payload = action.payload if action.payload is not None else self.responder(req.messages, req.schema)
        text = payload if isinstance(payload, str) else json.dumps(payload)
        return _send(h, 200, _answer(provider, model, text, req, cached, structured=req.schema is not None))

    def _cached_tokens(self, provider: str, req: Request) -> int:
        """Simulated prompt caching: a system prompt seen before is read from cache (Anthropic: only when marked)."""
        system = next((m["content"] for m in req.messages if m["role"] == "system"), "")
        if provider == "anthropic" and not any("cache_control" in b for b in req.body.get("system") or []):
            return 0
        with self._lock:
            hit = system in self._seen_prefixes
            self._seen_prefixes.add(system)
        return _count(system) if hit and system else 0


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _count(text: str) -> int:
    return len(text.split())


def _route(path: str) -> tuple[str, str]:
    path = path.split("?")[0]
    if path.endswith("/chat/completions"):
        return "openai", ""
    if path.endswith("/v1/messages"):
        return "anthropic", ""
    m = re.search(r"/models/([^/:]+):generateContent$", path)
    if m:
        return "gemini", m.group(1)
    return "unknown", ""


def _read(provider: str, body: Mapping[str, Any]) -> tuple[list[dict[str, str]], Any]:
    """The chat messages and output schema of a request, whatever the provider's shape."""
    if provider == "openai":
        fmt = body.get("response_format") or {}
        schema = (fmt.get("json_schema") or {}).get("schema") or fmt.get("schema")
        return [{"role": m["role"], "content": m["content"]} for m in body.get("messages", [])], schema
    if provider == "anthropic":
        system = "".join(b["text"] for b in body.get("system") or [])
        msgs = [{"role": "system", "content": system}] if system else []
        msgs += [{"role": m["role"], "content": m["content"] if isinstance(m["content"], str) else
                  "".join(b.get("text", "") for b in m["content"])} for m in body.get("messages", [])]
        tools = body.get("tools") or []
        return msgs, tools[0]["input_schema"] if tools else None
    if provider == "gemini":
        si = body.get("systemInstruction") or {}
        system = "".join(p.get("text", "") for p in si.get("parts", []))
        msgs = [{"role": "system", "content": system}] if system else []
        msgs += [{"role": "assistant" if c.get("role") == "model" else "user",
                  "content": "".join(p.get("text", "") for p in c.get("parts", []))} for c in body.get("contents", [])]
        cfg = body.get("generationConfig") or {}
        return msgs, cfg.get("responseJsonSchema") or cfg.get("responseSchema")
    return [], None


def _usage(provider: str, req: Request, text: str, cached: int) -> dict[str, Any]:
    prompt = sum(_count(m["content"]) for m in req.messages)
    out = _count(text)
    if provider == "openai":
        return {"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out,
                "prompt_tokens_details": {"cached_tokens": cached}}
    if provider == "anthropic":  # cache reads are counted outside input_tokens
        return {"input_tokens": prompt - cached, "output_tokens": out, "cache_read_input_tokens": cached,
                "cache_creation_input_tokens": 0}
    return {"promptTokenCount": prompt, "candidatesTokenCount": out, "totalTokenCount": prompt + out,
            "cachedContentTokenCount": cached}


def _answer(provider: str, model: str, text: str, req: Request, cached: int, *, structured: bool) -> dict[str, Any]:
    usage = _usage(provider, req, text, cached)
    if provider == "openai":
        return {"id": "chatcmpl-scripted", "object": "chat.completion", "created": int(time.time()),
                "model": req.body.get("model", ""), "usage": usage,
                "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                             "message": {"role": "assistant", "content": text, "refusal": None}}]}
    if provider == "anthropic":
        if structured:
            block: dict[str, Any] = {"type": "tool_use", "id": "toolu_scripted",
                                     "name": req.body["tools"][0]["name"], "input": json.loads(text)}
        else:
            block = {"type": "text", "text": text}
        return {"id": "msg_scripted", "type": "message", "role": "assistant", "model": req.body.get("model", ""),
                "content": [block], "stop_reason": "tool_use" if structured else "end_turn", "stop_sequence": None,
                "usage": usage}
    return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": usage, "modelVersion": model}


def _wants_logprobs(provider: str, body: Mapping[str, Any]) -> bool:
    if provider == "openai":
        return bool(body.get("logprobs"))
    return provider == "gemini" and bool((body.get("generationConfig") or {}).get("responseLogprobs"))


def _logprob_answer(provider: str, model: str, dist: Mapping[str, float], req: Request, cached: int) -> dict[str, Any]:
    """One output token, the distribution's most likely, with the top-n fields as the provider sends them."""
    ranked = sorted(((t, math.log(p)) for t, p in dist.items() if p > 0), key=lambda tp: -tp[1])
    token, logprob = ranked[0]
    body = _answer(provider, model, token, req, cached, structured=False)
    if provider == "openai":
        entry = _openai_logprob(token, logprob)
        entry["top_logprobs"] = [_openai_logprob(t, lp) for t, lp in ranked[: int(req.body.get("top_logprobs") or 0)]]
        body["choices"][0]["logprobs"] = {"content": [entry], "refusal": None}
        body["choices"][0]["finish_reason"] = "length" if req.body.get("max_tokens") == 1 else "stop"
        return body
    config = req.body.get("generationConfig") or {}
    candidate = body["candidates"][0]
    candidate["finishReason"] = "MAX_TOKENS" if config.get("maxOutputTokens") == 1 else "STOP"
    candidate["avgLogprobs"] = logprob
    result: dict[str, Any] = {"chosenCandidates": [_gemini_logprob(token, logprob)], "logProbabilitySum": logprob}
    if config.get("logprobs"):
        result["topCandidates"] = [{"candidates": [_gemini_logprob(t, lp) for t, lp in ranked[: config["logprobs"]]]}]
    candidate["logprobsResult"] = result
    return body


def _openai_logprob(token: str, logprob: float) -> dict[str, Any]:
    return {"token": token, "logprob": logprob, "bytes": list(token.encode("utf-8"))}


def _gemini_logprob(token: str, logprob: float) -> dict[str, Any]:
    return {"token": token, "tokenId": zlib.crc32(token.encode("utf-8")) % 262144, "logProbability": logprob}


def _refusal(provider: str, model: str) -> dict[str, Any]:
    if provider == "openai":
        return {"id": "chatcmpl-scripted", "object": "chat.completion", "created": int(time.time()), "model": model,
                "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                             "message": {"role": "assistant", "content": None, "refusal": "I can't help with that."}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
    if provider == "anthropic":
        return {"id": "msg_scripted", "type": "message", "role": "assistant", "model": model, "content": [],
                "stop_reason": "refusal", "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 0}}
    return {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 1, "totalTokenCount": 1},
            "modelVersion": model}


def _error(provider: str, status: int, message: str) -> dict[str, Any]:
    if provider == "anthropic":
        kind = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error",
                529: "overloaded_error"}.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
    if provider == "gemini":
        state = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL",
                 503: "UNAVAILABLE"}.get(status, "UNKNOWN")
        return {"error": {"code": status, "message": message, "status": state}}
    return {"error": {"message": message, "type": "rate_limit_error" if status == 429 else "server_error",
                      "param": None, "code": None}}


def _send(h: BaseHTTPRequestHandler, status: int, body: Any, headers: Mapping[str, str] | None = None) -> None:
    data = json.dumps(body).encode()
    h.send_response(status)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(data)))
    for k, v in (headers or {}).items():
        h.send_header(k, v)
    h.end_headers()
    h.wfile.write(data)


def main(argv: list[str] | None = None) -> int:
    """Serve the scripted world on 127.0.0.1 from a separate process (for benchmarks): prints the port."""
    import argparse

    from .world import FakeWorld

    p = argparse.ArgumentParser(description="scripted OpenAI/Anthropic/Gemini-compatible server on 127.0.0.1")
    p.add_argument("--latency", type=float, default=0.0, help="seconds added to every request")
    args = p.parse_args(argv)
    world = FakeWorld()
    server = ProviderServer(**world.serve(), latency=args.latency).start()
    print(server.port, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
