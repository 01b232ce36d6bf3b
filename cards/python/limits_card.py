"""The python `limits` library (Debian's python3-limits) over rlconform's
protocol v1, on its Redis storage (RedisStorage, redis://, redis-py).

Every decision is the library's: a request is `strategy.hit(item, user,
cost=n)`, what remains `strategy.get_window_stats(item, user)[1]`, a reset
`strategy.clear(item, user)`; the shim only translates calls. The item is
`RateLimitItemPerSecond(N, W seconds)` under the namespace
RLCONFORM_KEY_PREFIX + "LIMITER", so that every key the library writes
starts with the prefix. CARD_STRATEGY names the strategy as the library's
own registry does (limits.strategies.STRATEGIES): fixed-window,
moving-window or fixed-window-elastic-expiry.

Served by the standard library's ThreadingHTTPServer on 127.0.0.1:$PORT,
with a listen backlog of 128 (the default of 5 drops SYNs in the grader's
bursts) and Nagle off. Run by cards/python/serve.
"""

import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import redis
from limits import RateLimitItemPerSecond
from limits.storage import RedisStorage
from limits.strategies import STRATEGIES

MAX_LIMIT = 2**53 - 1
MAX_WINDOW_MS = 3_153_600_000_000
MAX_BODY = 64 * 1024


class Card:
    """The strategy on its storage, and the item in force."""

    def __init__(self, strategy, redis_url, prefix):
        # A store that is down answers at once (503): short timeouts.
        storage = RedisStorage(redis_url, socket_connect_timeout=1, socket_timeout=1)
        self.storage = storage  # the strategy holds a weak proxy only
        self.strategy = STRATEGIES[strategy](storage)
        self.namespace = prefix + "LIMITER"
        self.item = RateLimitItemPerSecond(5, 1, namespace=self.namespace)

    def configure(self, limit, window_ms):
        # Every key holds N and W (RateLimitItem.key_for): a new item.
        self.item = RateLimitItemPerSecond(limit, window_ms // 1000, namespace=self.namespace)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    card = None  # set in main

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
            # hit(cost=n) takes a weight; the items are whole seconds.
            return self.answer(200, {"clock": False, "configure": True, "remaining": True, "reset": True,
                                     "cost": True, "window_granularity_ms": 1000})
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
            if window % 1000:
                return 400, {"error": f"invalid configuration: limits' items are whole seconds (window_ms {window})"}
            card.configure(limit, window)
            return 204, None
        user = body.get("user_id")
        if not isinstance(user, str) or user == "":
            return 400, {"error": "invalid user id: want a non-empty string"}
        item = card.item
        if self.path == "/rlc/v1/allow":
            # hit(cost=n) as given: the library checks no sign nor size.
            cost = body.get("cost", 1)
            if type(cost) is not int:
                return 400, {"error": "invalid request cost: not an integer"}
            return 200, {"allowed": bool(card.strategy.hit(item, user, cost=cost))}
        if self.path == "/rlc/v1/remaining":
            return 200, {"remaining": card.strategy.get_window_stats(item, user)[1]}
        if self.path == "/rlc/v1/reset":
            card.strategy.clear(item, user)
            return 204, None
        return 404, {"error": "no such endpoint"}


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128


def main():
    strategy = os.environ.get("CARD_STRATEGY", "fixed-window")
    if strategy not in STRATEGIES:
        sys.exit(f"CARD_STRATEGY {strategy!r}: want one of {sorted(STRATEGIES)}")
    Handler.card = Card(strategy, os.environ["RLCONFORM_REDIS_URL"], os.environ.get("RLCONFORM_KEY_PREFIX", ""))
    Server(("127.0.0.1", int(os.environ["PORT"])), Handler).serve_forever()


if __name__ == "__main__":
    main()
