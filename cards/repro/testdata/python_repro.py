"""Reproductions of the python cards' deviations, on the libraries
themselves (Debian's python3-limits and python3-flask-limiter) and a real
Redis, apart from rlconform and the cards' shims: run by python_test.go
as `python3 python_repro.py NAME REDIS_URL`, each prints one JSON object
of facts that the Go test checks.

Where a deviation needs time to pass, the library's clock is set instead
(the module-level `time` that limits' Redis storage reads: storage/redis.py
:39, :97, :108), never waited for.
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


def remaining_truncated(url):
    # One hit at 1000.3, then at 1060.5 (a window of 60s): the entry
    # stopped counting at 1060.3, and hit() sees so (it compares with the
    # exact instant, acquire_moving_window.lua:2-8); get_window_stats asks
    # moving_window.lua for entries >= int(1060.5 - 60) = 1000
    # (storage/redis.py:40): the entry still counts there.
    storage, mw = moving(url)
    item = RateLimitItemPerSecond(5, 60, namespace="repro:LIMITER")
    at(1000.3)
    mw.hit(item, "u")
    at(1060.5)
    remaining = mw.get_window_stats(item, "u")[1]
    allowed = sum(bool(mw.hit(item, "u")) for _ in range(6))
    return {"remaining": remaining, "allowed_after": allowed}


def cost_above_limit(url):
    # lindex(key, limit - amount) with amount > limit is a negative index
    # (acquire_moving_window.lua:2): a fresh user's list has no such entry,
    # so hit(cost=7) under a limit of 6 is allowed, and LTRIM keeps 6.
    storage, mw = moving(url)
    item = RateLimitItemPerSecond(6, 60, namespace="repro:LIMITER")
    at(2000.0)
    allowed = bool(mw.hit(item, "fresh", cost=7))
    return {"allowed": allowed, "entries": storage.storage.llen(item.key_for("fresh"))}


def cost_zero_negative(url):
    # hit(cost=0) and hit(cost=-2) build an empty list of entries and call
    # LPUSH with none (acquire_moving_window.lua:10-14): Redis refuses the
    # script with an error; the user's log is unchanged.
    storage, mw = moving(url)
    item = RateLimitItemPerSecond(3, 60, namespace="repro:LIMITER")
    at(3000.0)
    mw.hit(item, "z")
    out = {}
    for cost in (0, -2):
        try:
            out[str(cost)] = "allowed" if mw.hit(item, "z", cost=cost) else "denied"
        except redis.exceptions.ResponseError as e:
            out[str(cost)] = "ResponseError: " + str(e)
    out["entries"] = storage.storage.llen(item.key_for("z"))
    return out


def negative_refund(url):
    # The fixed window's hit is INCRBY cost then <= limit (strategies.py
    # :141-149, incr_expire.lua:3): a cost of -2 takes 2 off the count.
    storage = RedisStorage(url)
    fw = FixedWindowRateLimiter(storage)
    item = RateLimitItemPerSecond(3, 60, namespace="repro:LIMITER")
    answers = [bool(fw.hit(item, "spent", cost=c)) for c in (1, 1, 1, -2, 1, 1, 1)]
    return {"answers": answers}


def reconfigure_fresh(url):
    # A RateLimitItem's key holds its amount and window (limits.py:105-122):
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
    # (wrappers.py:61-65), and limits' get_expiry int(TTL + now)
    # (storage/redis.py:108), where Redis's TTL rounds the key's remaining
    # life to the nearest second; Retry-After is int(reset - now)
    # (extension.py:859-864). A user who spent 5 of 5 is refused with 1.7s
    # of its window left at 1000.2 (it ends at 1001.9): reset 1003, a
    # second late; with 1.3s left at 1000.8 (it ends at 1002.1): reset
    # 1002 and Retry-After 1, before the window ends.
    import flask_limiter.extension as ext

    app = flask_app(url)
    client = app.test_client()
    r = redis.Redis.from_url(url)
    out = {}
    for user, now, pttl in (("late", 1000.2, 1700), ("early", 1000.8, 1300)):
        for _ in range(5):
            client.get("/", headers={"X-User": user})
        (key,) = r.keys(f"LIMITER/repro/{user}/*")
        r.pexpire(key, pttl)
        at(now)
        ext.time = types.SimpleNamespace(time=lambda: now)
        resp = client.get("/", headers={"X-User": user})
        out[user] = {"status": resp.status_code, "reset": int(resp.headers["X-RateLimit-Reset"]),
                     "retry_after": int(resp.headers["Retry-After"]), "now": now, "ends": now + pttl / 1000}
    return out


if __name__ == "__main__":
    name, url = sys.argv[1], sys.argv[2]
    print(json.dumps(globals()[name.replace("-", "_")](url)))
