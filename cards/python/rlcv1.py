"""rlconform's protocol v1 for the Python cards' shims (limits_card.py,
pyrate_card.py): it only translates. A card gives its capabilities and
four calls: allow(user, cost) -> bool, remaining(user) -> int,
reset(user), configure(limit, window_ms) -> an error string or None;
every decision is its library's. A card whose library refuses an invalid
cost with an exception of its own names it (card.invalid_cost): that
refusal answers 400, as the protocol says invalid input does.

Served by the standard library's ThreadingHTTPServer on 127.0.0.1:$PORT,
with a listen backlog of 128 (the default of 5 drops SYNs in the grader's
bursts) and Nagle off. A body is at most 64 KiB; limits and windows are
checked for range before the library sees them; redis-py's connection
errors and timeouts answer 503, the library's own errors 500.
"""

import json
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import redis

MAX_LIMIT = 2**53 - 1
MAX_WINDOW_MS = 3_153_600_000_000
MAX_BODY = 64 * 1024


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    card = None  # set by serve
    capabilities = None

    def log_message(self, *args):
        pass

    def answer(self, status, body=None):
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/rlc/v1/capabilities":
            return self.answer(200, self.capabilities)
        return self.answer(404, {"error": "no such endpoint"})

    def do_POST(self):
        try:
            n = int(self.headers.get("Content-Length", "0"))
            if not 0 <= n <= MAX_BODY:
                return self.answer(413, {"error": f"a body of {n} bytes: at most {MAX_BODY}"})
            body = json.loads(self.rfile.read(n).decode("utf-8"))
            if not isinstance(body, dict):
                raise ValueError("not a JSON object")
        except ValueError as e:
            return self.answer(400, {"error": f"malformed request body: {e}"})
        try:
            status, out = self.route(body)
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as e:
            status, out = 503, {"error": f"store: {type(e).__name__}: {e}"}
        except Exception as e:  # the library's own errors: shown, never a decision
            status, out = 500, {"error": f"{type(e).__name__}: {e}"}
        return self.answer(status, out)

    def route(self, body):
        card = self.card
        if self.path == "/rlc/v1/configure":
            limit, window = body.get("max_requests"), body.get("window_ms")
            if type(limit) is not int or type(window) is not int or limit < 1 or window < 1 \
                    or limit > MAX_LIMIT or window > MAX_WINDOW_MS:
                return 400, {"error": "invalid configuration: max_requests and window_ms must be integers in range"}
            if err := card.configure(limit, window):
                return 400, {"error": f"invalid configuration: {err}"}
            return 204, None
        user = body.get("user_id")
        if not isinstance(user, str) or user == "":
            return 400, {"error": "invalid user id: want a non-empty string"}
        if self.path == "/rlc/v1/allow":
            # The cost as given: what the library does with it is graded.
            cost = body.get("cost", 1)
            if type(cost) is not int:
                return 400, {"error": "invalid request cost: not an integer"}
            try:
                return 200, {"allowed": bool(card.allow(user, cost))}
            except getattr(card, "invalid_cost", ()) as e:
                return 400, {"error": f"invalid request cost: the library refused it: {type(e).__name__}: {e}"}
        if self.path == "/rlc/v1/remaining" and self.capabilities.get("remaining"):
            return 200, {"remaining": card.remaining(user)}
        if self.path == "/rlc/v1/reset":
            card.reset(user)
            return 204, None
        return 404, {"error": "no such endpoint"}


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128


def serve(card, capabilities):
    """Serves card on 127.0.0.1:$PORT until killed."""
    Handler.card, Handler.capabilities = card, capabilities
    Server(("127.0.0.1", int(os.environ["PORT"])), Handler).serve_forever()
