#!/usr/bin/env python3
"""A sliding-window rate limiter on Redis, serving rlconform's protocol v1.

Only the standard library: it speaks RESP to Redis itself, one connection
per call, so that it reconnects by itself after Redis comes back. Each
decision is one Lua script (prune, count, add a unique member per unit of
the request's cost, PEXPIRE), taking weighted requests ("cost") and
reading "now" from the X-Rlc-Now-Ms header when rlconform moves the clock,
or from Redis TIME otherwise (one clock for every instance).

Environment (set by `rlconform run --exec`):
  PORT                  the port to listen on (127.0.0.1)
  RLCONFORM_REDIS_URL   redis://host:port
  RLCONFORM_KEY_PREFIX  the prefix of every key
  CLOCK                 "off": ignore rlconform's clock header and decide on
                        Redis TIME alone (graded in real time; benched exact)

Grade it, and bench it:
  rlconform run --exec 'python3 examples/python/server.py' --instances 2
  rlconform bench --exec 'CLOCK=off python3 examples/python/server.py' --instances 2
"""

import json
import os
import socket
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

SCRIPT = """
local key = KEYS[1]
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local now
if ARGV[1] == "" then
  local t = redis.call("TIME")
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  now = tonumber(ARGV[1])
end
local cost = tonumber(ARGV[6])
redis.call("ZREMRANGEBYSCORE", key, "-inf", now - window)
local count = redis.call("ZCOUNT", key, "-inf", now)
local allowed = 0
if ARGV[4] == "allow" and cost == 0 then
  allowed = 1 -- a cost of 0 consumes nothing
elseif ARGV[4] == "allow" and count + cost <= limit then
  -- All or nothing: cost entries at now, each a member of its own.
  for i = 1, cost do
    redis.call("ZADD", key, now, now .. ":" .. ARGV[5] .. ":" .. i)
  end
  redis.call("PEXPIRE", key, window + 1000)
  allowed = 1
  count = count + cost
end
return {allowed, math.max(0, limit - count), now}
"""

MAX_LIMIT = 2**53 - 1
MAX_WINDOW_MS = 3_153_600_000_000


class StoreError(Exception):
    """Redis failed or could not be reached."""


class Redis:
    """A minimal RESP client: one connection per command."""

    def __init__(self, url):
        u = urlparse(url)
        self.addr = (u.hostname or "127.0.0.1", u.port or 6379)

    def call(self, *args):
        try:
            # A Redis that hangs (frozen) is a 503 within a second, the
            # store timeout rlconform grades (robust/store-outage).
            with socket.create_connection(self.addr, timeout=1) as conn:
                out = [b"*%d\r\n" % len(args)]
                for a in args:
                    b = a if isinstance(a, bytes) else str(a).encode()
                    out.append(b"$%d\r\n%s\r\n" % (len(b), b))
                conn.sendall(b"".join(out))
                return self._reply(conn.makefile("rb"))
        except OSError as e:
            raise StoreError(f"redis {self.addr[0]}:{self.addr[1]}: {e}") from e

    def _reply(self, f):
        line = f.readline()
        if not line:
            raise StoreError("redis closed the connection")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise StoreError("redis: " + rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = f.read(n + 2)
            return data[:-2]
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply(f) for _ in range(n)]
        raise StoreError(f"redis: unexpected reply {line!r}")


class Limiter:
    def __init__(self, redis, prefix):
        self.redis = redis
        self.prefix = prefix
        self.lock = threading.Lock()
        self.limit, self.window_ms = 5, 60_000

    def key(self, user_id):
        return (self.prefix + "{" + user_id + "}").encode()

    def decide(self, op, user_id, now_ms, cost=1):
        with self.lock:
            limit, window = self.limit, self.window_ms
        if cost > limit:
            return False, None, None  # can never fit: refused, nothing read
        allowed, remaining, now = self.redis.call(
            "EVAL", SCRIPT, 1, self.key(user_id),
            "" if now_ms is None else now_ms, window, limit, op, uuid.uuid4().hex, cost)
        return allowed == 1, remaining, now

    def configure(self, limit, window_ms):
        with self.lock:
            self.limit, self.window_ms = limit, window_ms

    def reset(self, user_id):
        self.redis.call("DEL", self.key(user_id))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    limiter = None  # set in main
    clock = True  # honour X-Rlc-Now-Ms

    def log_message(self, *args):
        pass

    def answer(self, status, body=None):
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def now_ms(self):
        v = self.headers.get("X-Rlc-Now-Ms")
        return None if v is None or not self.clock else int(v)

    def do_GET(self):
        if self.path == "/rlc/v1/capabilities":
            self.answer(200, {"clock": self.clock, "configure": True, "remaining": True, "reset": True, "cost": True})
        else:
            self.answer(404, {"error": "not found"})

    def do_POST(self):
        try:
            n = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(n) or b"{}")
            if not isinstance(body, dict):
                raise ValueError("not an object")
        except ValueError as e:
            return self.answer(400, {"error": f"bad body: {e}"})
        try:
            if self.path == "/rlc/v1/configure":
                limit, window = body.get("max_requests"), body.get("window_ms")
                if not all(type(v) is int for v in (limit, window)) or limit < 1 or window < 1 \
                        or limit > MAX_LIMIT or window > MAX_WINDOW_MS:
                    return self.answer(400, {"error": "max_requests and window_ms must be whole numbers in range"})
                self.limiter.configure(limit, window)
                return self.answer(204)
            user = body.get("user_id")
            if not isinstance(user, str) or user == "":
                return self.answer(400, {"error": "user_id must be a non-empty string"})
            if self.path == "/rlc/v1/allow":
                cost = body.get("cost", 1)
                if type(cost) is not int or cost < 0:
                    return self.answer(400, {"error": "cost must be a whole number, 0 or more"})
                allowed, _, now = self.limiter.decide("allow", user, self.now_ms(), cost)
                if now is None:
                    return self.answer(200, {"allowed": allowed})
                return self.answer(200, {"allowed": allowed, "now_ms": now})
            if self.path == "/rlc/v1/remaining":
                _, remaining, now = self.limiter.decide("remaining", user, self.now_ms())
                return self.answer(200, {"remaining": remaining, "now_ms": now})
            if self.path == "/rlc/v1/reset":
                self.limiter.reset(user)
                return self.answer(204)
            return self.answer(404, {"error": "not found"})
        except StoreError as e:
            return self.answer(503, {"error": str(e)})


def main():
    port = int(os.environ.get("PORT", "8080"))
    redis = Redis(os.environ.get("RLCONFORM_REDIS_URL", "redis://127.0.0.1:6379"))
    Handler.limiter = Limiter(redis, os.environ.get("RLCONFORM_KEY_PREFIX", "rl:"))
    Handler.clock = os.environ.get("CLOCK", "on") != "off"
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
