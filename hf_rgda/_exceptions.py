"""Exceptions raised by hf_rgda.

The tree::

    RGDAError
    ├── ConfigError          bad configuration value (names the field and the accepted forms)
    ├── InputError           bad input row (names the row and the problem)
    ├── SchemaError          tags outside the label set or an invalid tag scheme
    ├── ProvisionError       a model file could not be assembled or failed its hash check
    ├── HubError             publishing to the Hub failed: no token, a rejected token, or a Hub error
    ├── ParseError           an LLM answer could not be parsed (keeps the raw text)
    └── BackendError         an LLM backend failed (``retryable`` says whether another attempt may succeed)
        ├── AuthenticationError  bad or missing key (never retried)
        ├── RefusalError         the model declined to answer (never retried)
        ├── RateLimitError       HTTP 429 (retried, honouring ``retry_after``)
        ├── ServerError          HTTP 5xx / overloaded (retried)
        ├── ConnectionError      the connection failed or dropped (retried)
        └── TimeoutError         no answer in time (retried)

The per-seed policy (applied in one place, :meth:`hf_rgda.pipeline.Pipeline.each`): what goes wrong with one seed
is that seed's failure, kept on it (``rgda_status="failed"`` with the stage and the error in ``rgda_reason``, counted
in the run summary; inside a judge loop, a note that ends the loop for that seed), and the batch goes on: a
:class:`ParseError`, a backend's transient or server error once its retries are spent, a :class:`RefusalError`, and
an unexpected exception in one seed's stage (a bug: logged with its traceback, its text redacted). What would fail
every seed the same way stops the run at once and propagates out of ``ds.map``: :class:`AuthenticationError`,
:class:`ConfigError`, :class:`ProvisionError`, and an ``ImportError`` (a missing extra).
"""

from __future__ import annotations

__all__ = ["AuthenticationError", "BackendError", "ConfigError", "ConnectionError", "HubError", "InputError",
           "ParseError", "ProvisionError", "RGDAError", "RateLimitError", "RefusalError", "SchemaError", "ServerError",
           "TimeoutError"]


class RGDAError(Exception):
    """Base class of every error hf_rgda raises on purpose."""


class ConfigError(RGDAError, ValueError):
    """A configuration value is invalid."""


class SchemaError(RGDAError, ValueError):
    """A tag sequence violates the label set or the tagging scheme."""


class InputError(RGDAError, ValueError):
    """An input row is malformed.

    Attributes:
        row: index (or description) of the offending row.
    """

    def __init__(self, message: str, *, row: int | str | None = None) -> None:
        self.row = row
        prefix = f"row {row}: " if row is not None else ""
        super().__init__(prefix + message)


class ProvisionError(RGDAError, RuntimeError):
    """A model file could not be provisioned."""


class HubError(RGDAError, RuntimeError):
    """Publishing failed: no token, a rejected token, or a Hub error (the token is never shown)."""


class ParseError(RGDAError, ValueError):
    """An LLM answer could not be parsed into the expected structure.

    Attributes:
        raw: the raw text the model produced.
    """

    def __init__(self, message: str, *, raw: str = "") -> None:
        self.raw = raw
        super().__init__(message)


class BackendError(RGDAError, RuntimeError):
    """An LLM backend call failed.

    Attributes:
        status: the HTTP status, when there was one.
        retry_after: seconds the server asked to wait (``Retry-After``), when it said.
    """

    retryable: bool = False

    def __init__(self, message: str, *, status: int | None = None, retry_after: float | None = None) -> None:
        self.status = status
        self.retry_after = retry_after
        super().__init__(message)


class AuthenticationError(BackendError):
    """The backend rejected the credentials, or none were found."""


class RefusalError(BackendError):
    """The model declined to answer (a safety refusal); another attempt would not help."""


class RateLimitError(BackendError):
    """The backend refused the call for rate reasons (HTTP 429)."""

    retryable = True


class ServerError(BackendError):
    """The backend failed on its side (HTTP 5xx, overloaded)."""

    retryable = True


class ConnectionError(BackendError):
    """The connection could not be made or was dropped before an answer."""

    retryable = True


class TimeoutError(BackendError):
    """The backend did not answer in time."""

    retryable = True
