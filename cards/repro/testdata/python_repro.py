"""Reproductions of the python cards' deviations, on the libraries
themselves (limits 5.x, Flask-Limiter 4.x, as cards/python/requirements.txt
pins them, in cards/.venv) and a real Redis, apart from rlconform and the
cards' shims: run by python_test.go as `cards/.venv/bin/python
python_repro.py NAME REDIS_URL`, each prints one JSON object of facts
that the Go test checks.

Where a deviation needs time to pass, the library's clock is set instead
(the module-level `time` that limits' Redis storage reads:
storage/redis.py:183, :257, :293), never waited for.
"""

import importlib.util
import json
import os
import sys
import types

import redis
from limits import RateLimitItemPerSecond
from limits.storage import RedisStorage
from limits.strategies import FixedWindowRateLimiter, MovingWindowRateLimiter
import limits.storage.redis as limits_redis


def at(t):
    """Sets the clock limits' Redis storage reads to t (unix seconds)."""
    limits_redis.time = types.SimpleNamespace(time=lambda: t)


def moving(url):
    storage = RedisStorage(url)
    return storage, MovingWindowRateLimiter(storage)


def cost_negative(url):
    # hit(cost=-2) on the moving window: -2 is not above the limit
    # (acquire_moving_window.lua:6-8), LINDEX limit + 2 finds no entry in a
    # list trimmed to the limit (:10-14), the loop makes no entries (:15-18),
    # and the script answers true (:26): allowed, the log unchanged.
    storage, mw = moving(url)
    item = RateLimitItemPerSecond(3, 60, namespace="repro:LIMITER")
    at(3000.0)
    for _ in range(3):
        mw.hit(item, "z")
    allowed = bool(mw.hit(item, "z", cost=-2))
    key = storage.prefixed_key(item.key_for("z"))
    return {"allowed": allowed, "entries": storage.storage.llen(key), "after": bool(mw.hit(item, "z"))}


def negative_refund(url):
    # The fixed window's hit is INCRBY cost then <= limit (strategies.py
    # :156-163, incr_expire.lua:3): a cost of -2 takes 2 off the count.
    storage = RedisStorage(url)
    fw = FixedWindowRateLimiter(storage)
    item = RateLimitItemPerSecond(3, 60, namespace="repro:LIMITER")
    answers = [bool(fw.hit(item, "spent", cost=c)) for c in (1, 1, 1, -2, 1, 1, 1)]
    return {"answers": answers}


def sliding_negative_refund(url):
    # The sliding window counter's hit: (weighted + amount) > limit refuses
    # (acquire_sliding_window.lua:31-35), else INCRBY amount on the current
    # counter (:38-39): a cost of -2 is never above the limit, and takes 2
    # off the count.
    from limits.strategies import SlidingWindowCounterRateLimiter

    sw = SlidingWindowCounterRateLimiter(RedisStorage(url))
    item = RateLimitItemPerSecond(3, 60, namespace="repro:LIMITER")
    answers = [bool(sw.hit(item, "spent", cost=c)) for c in (1, 1, 1, -2, 1, 1, 1)]
    return {"answers": answers}


def reconfigure_fresh(url):
    # A RateLimitItem's key holds its amount and window (limits.py:106-124):
    # a user with 5 entries under 6 per 60s has none under 2 per 60s.
    storage, mw = moving(url)
    at(4000.0)
    six = RateLimitItemPerSecond(6, 60, namespace="repro:LIMITER")
    two = RateLimitItemPerSecond(2, 60, namespace="repro:LIMITER")
    for _ in range(5):
        mw.hit(six, "r")
    allowed = sum(bool(mw.hit(two, "r")) for _ in range(3))
    return {"keys": [six.key_for("r"), two.key_for("r")], "allowed_under_2": allowed}


def flask_app(url):
    os.environ.update(RLCONFORM_REDIS_URL=url, RLCONFORM_KEY_PREFIX="repro", CARD_LIMIT="5", CARD_PERIOD="10")
    path = os.path.join(os.path.dirname(__file__), "..", "..", "python", "flask_app.py")
    spec = importlib.util.spec_from_file_location("flask_app", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.app


def flask_reset(url):
    # Flask-Limiter's X-RateLimit-Reset is int(get_expiry + 1)
    # (_extension.py:93-97), and limits' get_expiry TTL + now
    # (storage/redis.py:286-293), where Redis's TTL rounds the key's
    # remaining life to the nearest second; Retry-After is int(reset - now)
    # (_extension.py:927-932). A user who spent 5 of 5 is refused with 1.7s
    # of its window left at 1000.2 (it ends at 1001.9): reset 1003, a
    # second late; with 1.3s left at 1000.8 (it ends at 1002.1): reset
    # 1002 and Retry-After 1, before the window ends.
    import flask_limiter._extension as ext

    app = flask_app(url)
    client = app.test_client()
    r = redis.Redis.from_url(url)
    out = {}
    for user, now, pttl in (("late", 1000.2, 1700), ("early", 1000.8, 1300)):
        for _ in range(5):
            client.get("/", headers={"X-User": user})
        (key,) = r.keys(f"LIMITS:LIMITER/repro/{user}/*")
        r.pexpire(key, pttl)
        at(now)
        ext.time = types.SimpleNamespace(time=lambda: now)
        resp = client.get("/", headers={"X-User": user})
        out[user] = {"status": resp.status_code, "reset": int(resp.headers["X-RateLimit-Reset"]),
                     "retry_after": int(resp.headers["Retry-After"]), "now": now, "ends": now + pttl / 1000}
    return out


def slowapi_reset(url):
    # slowapi's X-RateLimit-Reset is str(1 + get_window_stats()[0])
    # (slowapi/extension.py:387-399), typed an int there; limits 5's
    # fixed window answers TTL + time.time(), a float (limits
    # storage/redis.py:286-293, strategies.py:179-191): the header is a
    # float such as "1795902171.09". Retry-After is int(reset - now)
    # (:410-414). The app is cards/python/slowapi_app.py, called as an
    # ASGI app: 6 requests of a user under 5 per 10 s.
    import asyncio

    os.environ.update(RLCONFORM_REDIS_URL=url, RLCONFORM_KEY_PREFIX="repro", CARD_LIMIT="5", CARD_PERIOD="10")
    path = os.path.join(os.path.dirname(__file__), "..", "..", "python", "slowapi_app.py")
    spec = importlib.util.spec_from_file_location("slowapi_app", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    async def get(user):
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
                 "scheme": "http", "path": "/", "raw_path": b"/", "root_path": "", "query_string": b"",
                 "headers": [(b"host", b"card"), (b"x-user", user.encode())],
                 "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}
        sent = []

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message):
            sent.append(message)

        await mod.app(scope, receive, send)
        start = next(m for m in sent if m["type"] == "http.response.start")
        return start["status"], {k.decode().lower(): v.decode() for k, v in start["headers"]}

    async def run():
        return [await get("u") for _ in range(6)]

    answers = asyncio.run(run())
    status, headers = answers[-1]
    return {"statuses": [a[0] for a in answers], "reset": headers.get("x-ratelimit-reset", ""),
            "retry_after": headers.get("retry-after", "")}


def pyrate_lock_busy(url):
    # try_acquire(blocking=False) takes the Limiter's lock without waiting
    # (limiter.py:588, combined_lock :75-79) and answers False when another
    # thread holds it (:417-421), whatever the bucket holds: a fresh user is
    # refused while any other request is being decided.
    import threading

    from pyrate_limiter import Limiter, Rate, RedisBucket

    conn = redis.Redis.from_url(url)
    limiter = Limiter(RedisBucket.init([Rate(5, 1000)], conn, "repro:pyrate:busy"))
    held, done = threading.Event(), threading.Event()

    def hold():
        with limiter.lock:
            held.set()
            done.wait(10)

    t = threading.Thread(target=hold)
    t.start()
    held.wait(10)
    busy = limiter.try_acquire("fresh", blocking=False)
    done.set()
    t.join()
    free = limiter.try_acquire("fresh", blocking=False)
    return {"while_held": bool(busy), "after": bool(free), "entries": conn.zcard("repro:pyrate:busy")}


def pyrate_stamp_order(url):
    # RedisBucket stamps an item with its process's clock (redis_bucket.py
    # :105-107) and counts the entries from now - W up to that now
    # (ZCOUNT, :36): entries stamped later than the caller's now, by another
    # process or a thread that reached Redis first, are not counted. Five
    # items at 2000 fill a limit of 5 per second; a sixth stamped 1999 that
    # arrives after them is allowed: 6 in one second.
    from pyrate_limiter import Rate, RateItem, RedisBucket

    conn = redis.Redis.from_url(url)
    bucket = RedisBucket.init([Rate(5, 1000)], conn, "repro:pyrate:order")
    first = [bool(bucket.put(RateItem("u", 2000))) for _ in range(5)]
    late = bool(bucket.put(RateItem("u", 1999)))
    after = bool(bucket.put(RateItem("u", 2001)))
    return {"first": first, "late_stamp": late, "after": after, "entries": conn.zcard("repro:pyrate:order")}


if __name__ == "__main__":
    name, url = sys.argv[1], sys.argv[2]
    print(json.dumps(globals()[name.replace("-", "_")](url)))
