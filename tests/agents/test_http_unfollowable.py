"""An endpoint's answer passk cannot follow is the endpoint's fault, said as such (issue 31).

A redirect whose ``Location`` urllib3 cannot parse (an invalid IPv6 host,
a label of 70 bytes) a ``Retry-After`` of 400 digits and a decision nested 900 levels deep
used to escape the
HTTP agent as Python exceptions, recorded as the agent's ``exception``
attempts (a code the protocol keeps for in-process agents).  They are now
``http-status`` attempts whose detail says why; the control, a redirect to
a good URL, is followed.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from passk_action.agents.http import HTTP_STATUS, HttpAgent
from passk_action.agents.runner import AttemptRequest
from passk_action.core.model import Phase, Row, Version
from passk_action.core.retry_after import retry_after_s
from passk_action.core.scoring import BAD_OUTPUT
from passk_action.inputs.agent_config import HttpAgentConfig

REPLIES: dict[str, tuple[int, list[tuple[str, str]]]] = {
    "/ipv6": (302, [("Location", "http://[zz]/x")]),
    "/open-bracket": (302, [("Location", "http://[::1/x")]),
    "/long-label": (302, [("Location", "http://" + "a" * 70 + ".example/x")]),
    "/good": (307, [("Location", "/decide")]),  # 307: followed with the same POST
}


class _Endpoint(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        status, headers = REPLIES.get(self.path, (200, []))
        body = b'{"decision": "deny"}' if status == 200 else b""
        if self.path == "/deep":
            body = b'{"decision": ' + b'{"k": ' * 900 + b"1" + b"}" * 901
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Endpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _ask(url: str) -> tuple[str | None, str | None, str | None]:
    request = AttemptRequest(Row("r1", {"n": 1}, "deny"), 1, Phase.MAIN, Version.CANDIDATE)
    with HttpAgent(HttpAgentConfig(url=url, timeout_s=5), {}, max_retry_after_s=1) as agent:
        attempt = agent.run(request)
    return attempt.decision, attempt.error, attempt.detail


@pytest.mark.parametrize("path", ["/ipv6", "/open-bracket", "/long-label"])
def test_a_redirect_that_cannot_be_followed_is_an_http_error_with_the_reason(
    base: str, path: str
) -> None:
    decision, error, detail = _ask(base + path)
    assert (decision, error) == (None, HTTP_STATUS)
    assert detail is not None and "the endpoint's answer cannot be followed" in detail


def test_control_a_redirect_to_a_good_url_is_followed(base: str) -> None:
    assert _ask(base + "/good") == ("deny", None, None)


def test_a_decision_nested_900_levels_is_a_bad_output_not_an_exception(base: str) -> None:
    """Masking walked it recursively (RecursionError); the answer's reader bounds nesting first."""
    decision, error, detail = _ask(base + "/deep")
    assert (decision, error) == (None, BAD_OUTPUT)
    assert detail is not None and "nested more than 100 levels" in detail


@pytest.mark.parametrize("digits", [13, 400, 5000])
def test_a_retry_after_of_many_digits_is_a_long_wait_not_an_exception(digits: int) -> None:
    assert retry_after_s("9" * digits, 0.0) == 1e12
    assert retry_after_s("120", 0.0) == 120.0  # the control
