"""What a failed request to a model server means: whether it is worth sending again (dropped
connections, timeouts, 408, 429, 5xx and a 200 whose body is not JSON), how long the server
asked to wait, and the failure told as one line: what failed, why, what to do."""
from __future__ import annotations

import email.utils
import os
from datetime import datetime, timezone

import httpx

from analysis.vlm.backends.base import BackendError

RETRY_STATUS = frozenset({408, 429})  # and every 5xx


class MalformedReply(ValueError):
    """A 200 whose body is not JSON: a reply cut off on its way, worth asking again."""

    def __init__(self, response: httpx.Response):
        super().__init__(f"not JSON: {response.text[:120]!r}")
        self.response = response


def transient(error: BaseException) -> bool:
    """Whether a failed request may succeed if sent again."""
    if isinstance(error, httpx.HTTPStatusError):
        status = error.response.status_code
        return status in RETRY_STATUS or status >= 500
    return isinstance(error, (httpx.TimeoutException, httpx.NetworkError,
                              httpx.RemoteProtocolError, MalformedReply))


def retry_after_s(headers, now: datetime | None = None) -> float | None:
    """Seconds a server asked us to wait: ``retry-after-ms`` (OpenAI), or ``Retry-After`` as
    seconds or as an HTTP-date (RFC 9110 sec. 10.2.3); None when it asked nothing readable."""
    try:
        return max(0.0, float(headers["retry-after-ms"]) / 1000)
    except (KeyError, ValueError):
        pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - (now or datetime.now(timezone.utc))).total_seconds())


def _status_hint(status: int, key_env: str) -> str:
    if status in (401, 403):
        if not os.environ.get(key_env):
            return f" (${key_env} is not set: put the API key there)"
        return f" (check the API key in ${key_env} and its access to this model)"
    if status == 404:
        return " (check --base-url, usually ending in /v1, and --model)"
    if status == 413:
        return " (the request is too large: fewer frames, with --fps or --n-frames)"
    if status == 429:
        return " (rate limited: lower --concurrency, or rerun later)"
    return ""


def _server_message(response: httpx.Response) -> str:
    """The server's own words: OpenAI's {"error": {"message"}}, vLLM's {"message"}, or text."""
    try:
        payload = response.json()
    except ValueError:
        return " ".join(response.text.split())[:300] or response.reason_phrase
    error = payload.get("error", payload) if isinstance(payload, dict) else payload
    if isinstance(error, dict):
        error = error.get("message") or error.get("detail") or error
    return " ".join(str(error).split())[:300]


def failure(where: str, error: httpx.HTTPError | MalformedReply, attempts: int, base_url: str,
            api_key_env: str, timeout_s: float) -> BackendError:
    """The error of a request to ``base_url`` that failed after ``attempts`` as one line:
    what failed, why, what to do."""
    tries = f" (after {attempts} attempts)" if attempts > 1 else ""
    if isinstance(error, MalformedReply):
        return BackendError(f"{where} answered with something that is not JSON{tries}: "
                            f"{error.response.text[:120]!r}", transient=True)
    if isinstance(error, httpx.HTTPStatusError):
        status = error.response.status_code
        hint = _status_hint(status, api_key_env)
        return BackendError(f"{where}: HTTP {status}{tries}: "
                            f"{_server_message(error.response)}{hint}",
                            transient=transient(error), status=status)
    if isinstance(error, httpx.TimeoutException):
        return BackendError(f"{where}: no answer within {timeout_s:g} s{tries}; "
                            "raise --timeout or rerun later", transient=True)
    if isinstance(error, httpx.ConnectError):
        return BackendError(f"cannot reach {base_url}{tries}: {error}; is the server "
                            "running, and is --base-url right?", transient=True)
    return BackendError(f"{where}: {type(error).__name__}: {error}{tries}",
                        transient=transient(error))
