"""Keeping secrets out of logs, traces, caches and exceptions: one scrubber for the whole package.

Three pieces:

* :func:`redact`: text with the given secrets, anything shaped like a provider key, the user info of any URL
  (``http://user:password@host``) and its credential query parameters (``?api-key=...``) replaced by ``***``.
* The process's registry of secrets given in code (:func:`register_secret`, :func:`registered_secret`): a remote
  backend's ``api_key`` and its ``base_url`` credentials (user info and credential query parameters). A backend's pickled state (what ``datasets`` hashes into a
  fingerprint and what it sends to ``num_proc`` workers) holds only the entry's id, derived from the backend's public
  identity; the secret stays in this process's memory, which forked workers inherit, and in the environment variable
  ``HF_RGDA_SECRET_<id>``, which every child process inherits (spawned and forkserver workers included, when the
  variable was set before they started). So a key given in code reaches the workers without entering a fingerprint,
  a pickle or the response cache.
* :func:`install_log_redaction`: a :class:`logging.Filter` on the HTTP stack's loggers (``httpx``, ``httpcore``,
  their ``httpx2``/``httpcore2`` copies in the openai SDK, ``openai``, ``anthropic``, ``google_genai`` and their
  children) that scrubs each record with :func:`redact` and every registered secret, whatever level the application
  enables.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
import urllib.parse
from collections.abc import Sequence
from typing import Any

__all__ = ["CREDENTIAL_PARAM", "LOGGERS", "SECRET_ENV_PREFIX", "environment_secrets", "install_log_redaction",
           "public_query", "public_url", "query_secrets", "redact", "register_secret", "registered_secret", "secret_id",
           "secret_strings", "split_url"]

_KEY_PATTERN = re.compile(r"\b(sk-[A-Za-z0-9_\-*.]{6,}|sk-ant-[A-Za-z0-9_\-*.]{6,}|AIza[A-Za-z0-9_\-]{10,})")
# the user info of a URL: "scheme://user:password@" or "scheme://token@"
_USERINFO_PATTERN = re.compile(r"(?<=://)[^\s/@?#]+@")
_CREDENTIAL_WORDS = r"key|token|secret|passw|sig|auth|credential"
#: a query parameter whose name says it carries a credential (``?api-key=...``, ``&access_token=...``)
CREDENTIAL_PARAM = re.compile(_CREDENTIAL_WORDS, re.IGNORECASE)
# such a parameter's name and value in a URL written in text (the value is what redact() replaces)
_QUERY_SECRET_PATTERN = re.compile(rf"(?<=[?&])([A-Za-z0-9_.-]*(?:{_CREDENTIAL_WORDS})[A-Za-z0-9_.-]*=)"
                                   r"[^&\s#\"'<>]+", re.IGNORECASE)

#: environment variables carrying secrets given in code to child processes
SECRET_ENV_PREFIX = "HF_RGDA_SECRET_"
#: the loggers that see request URLs, the HTTP clients' and the provider SDKs': every logger whose top-level name
#: starts with one of these (``httpx``, and ``httpx2`` as the openai 3 SDK's vendored copy names itself), children too
LOGGERS = ("httpx", "httpcore", "openai", "anthropic", "google", "urllib3", "aiohttp", "requests")

_registry: dict[str, str] = {}
_registry_lock = threading.Lock()
_all: list[str] | None = None  # _all_registered()'s answer, dropped when a secret is registered


def redact(text: str, secrets: Sequence[str] = ()) -> str:
    """``text`` with every given secret, anything shaped like a provider key and the user info of every URL
    replaced by ``***``."""
    for s in secrets:
        if s and len(s) >= 4:
            text = text.replace(s, "***")
    text = _USERINFO_PATTERN.sub("***@", text)
    text = _QUERY_SECRET_PATTERN.sub(r"\1***", text)
    return _KEY_PATTERN.sub("***", text)


def query_secrets(query: str) -> list[str]:
    """The values of a URL query's credential parameters (:data:`CREDENTIAL_PARAM`: ``api-key``, ``token``, ...)."""
    return [v for k, v in urllib.parse.parse_qsl(query, keep_blank_values=False) if CREDENTIAL_PARAM.search(k) and v]


def public_query(query: str) -> str:
    """A URL query without its credential parameters (:data:`CREDENTIAL_PARAM`), the others kept in their order
    (``api-version=2024-06-01&api-key=...`` -> ``api-version=2024-06-01``): what may be shown and be part of an
    identity."""
    pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
    return urllib.parse.urlencode([(k, v) for k, v in pairs if not CREDENTIAL_PARAM.search(k)])


def split_url(url: str) -> tuple[str, str, str]:
    """``url`` without its user info and its query's credential parameters, the user info (``user:password``; ""
    when none) and the whole query where it holds a credential (``api-version=...&api-key=...``; "" when it holds
    none): a key can be written in either, and both stay out of what is kept and shown. A parameter that is no
    credential (Azure's ``api-version``) stays in the URL kept, so it is part of the backend's identity."""
    parts = urllib.parse.urlsplit(url)
    userinfo, at, hostport = parts.netloc.rpartition("@")
    public = urllib.parse.urlunsplit((parts.scheme, hostport if at else parts.netloc, parts.path.rstrip("/"),
                                      public_query(parts.query), parts.fragment))
    return public, userinfo if at else "", parts.query if query_secrets(parts.query) else ""


def public_url(url: str) -> str:
    """``url`` without user info or credential parameters (where a key could be written): the identity reaches
    summaries and cards."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, public_query(parts.query), ""))


def environment_secrets() -> list[str]:
    """The values of the environment's key and token variables (``*_API_KEY``, ``*_TOKEN``, ``HF_TOKEN``,
    ``HUGGING_FACE_HUB_TOKEN``) of 8 characters or more, and the secrets given in code (:func:`register_secret`):
    what must never leave this machine in published text."""
    names = [k for k in os.environ if k.endswith(("_API_KEY", "_TOKEN")) or k in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")]
    found = [os.environ[k] for k in names if len(os.environ[k]) >= 8]
    return found + [s for s in _all_registered() if len(s) >= 8]


# ---------------------------------------------------------------- secrets given in code
def secret_id(public: Any) -> str:
    """The registry id of the secrets of an object whose public description (JSON-able, no secret in it) is
    ``public``: the same in every process, whatever the secret."""
    return hashlib.sha256(json.dumps(public, sort_keys=True, default=str).encode()).hexdigest()[:20]


def register_secret(sid: str, value: str) -> None:
    """Hold ``value`` (a JSON text of secrets, read by :func:`secret_strings`) under ``sid`` in this process and in
    ``HF_RGDA_SECRET_<sid>`` for its children. The latest registration under an id wins."""
    global _all
    with _registry_lock:
        _registry[sid] = value
        os.environ[SECRET_ENV_PREFIX + sid] = value
        _all = None


def forget_secret(sid: str) -> None:
    """Drop what :func:`register_secret` holds under ``sid`` (a key typed for one request, once it is over)."""
    global _all
    with _registry_lock:
        _registry.pop(sid, None)
        os.environ.pop(SECRET_ENV_PREFIX + sid, None)
        _all = None


def registered_secret(sid: str) -> str | None:
    """The value registered under ``sid`` in this process, else inherited through the environment; None if neither."""
    with _registry_lock:
        if sid in _registry:
            return _registry[sid]
    return os.environ.get(SECRET_ENV_PREFIX + sid)


def _all_registered() -> list[str]:
    """Every registered secret: the keys and the passwords (a user name is no secret) of every entry, longest first.
    Computed once (the log filter asks on every record) and again after each :func:`register_secret`; the first call
    in a child process reads what it inherited through the environment."""
    global _all
    with _registry_lock:
        if _all is None:
            values = [*_registry.values(), *(v for k, v in os.environ.items() if k.startswith(SECRET_ENV_PREFIX))]
            _all = sorted({s for v in values for s in secret_strings(v)}, key=len, reverse=True)
        return _all


def secret_strings(value: str) -> list[str]:
    """The secrets in a registered value, a JSON object ``{"api_key": KEY or null, "url_auth": {url: userinfo},
    "url_query": {url: query}}``: the key, each user info with its password (the part after the first ``:``, or all
    of a token), and the values of each query's credential parameters (``?api-key=...``)."""
    try:
        data = json.loads(value)
    except ValueError:
        return [value]
    if not isinstance(data, dict):
        return [value]
    found = [data.get("api_key") or ""]
    for userinfo in (data.get("url_auth") or {}).values():
        found += [userinfo, userinfo.split(":", 1)[-1]]
    for query in (data.get("url_query") or {}).values():
        found += query_secrets(query)
    return [s for s in found if isinstance(s, str) and s]


# ---------------------------------------------------------------- logs
class RedactingFilter(logging.Filter):
    """Scrubs a record's message (formatted with its arguments) and its exception text with :func:`redact` and every
    registered secret; the record is never dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # a malformed record: leave it to logging's own error handling
            return True
        secrets = _all_registered()
        clean = redact(message, secrets)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text, secrets)
        return True


_FILTER = RedactingFilter()


def install_log_redaction(prefixes: Sequence[str] = LOGGERS) -> None:
    """Put the redacting filter on the loggers named by ``prefixes`` and on every logger that exists now whose
    top-level name starts with one of them (a logger's filters do not apply to its children's records, so each gets
    its own). Idempotent; the backends call it whenever they create a client, after the SDK (and so its module
    loggers) is imported."""
    names = set(prefixes) | {n for n in list(logging.Logger.manager.loggerDict)
                             if n.split(".", 1)[0].startswith(tuple(prefixes))}
    for name in names:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
