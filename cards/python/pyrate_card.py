"""pyrate-limiter (4.x from PyPI, cards/python/requirements.txt) over
rlconform's protocol v1 (rlcv1.py), with its Redis bucket (RedisBucket on
redis-py) and its default algorithm (the sliding window log).

Every decision is the library's: a request is `Limiter.try_acquire(user,
weight=n, blocking=False)`, a reset the user's bucket's `flush()`; the shim
only translates calls. A Limiter takes a BucketFactory, the library's own
place for "bucket-routing/creating logic" (abstracts/bucket.py): this
one, as its README's per-name routing does, gives each user a
`RedisBucket.init([Rate(N, W ms)], redis, key)` under the key
RLCONFORM_KEY_PREFIX + "pyrate:" + user, scheduled for the library's
leak (BucketFactory.schedule_leak), and stamps items with the bucket's
own clock (RedisBucket.now(): the process's wall clock in ms). A change
of the rate is new bucket objects on the same keys: what the logs hold
is kept. The library answers no remaining count: not declared. Run by
cards/python/serve-pyrate.
"""

import os
import threading

import redis
from pyrate_limiter import BucketFactory, Limiter, Rate, RateItem, RedisBucket

import rlcv1


class PerUser(BucketFactory):
    """A RedisBucket per user (item name), as the library's docs route."""

    def __init__(self, rates, conn, prefix):
        self.rates, self.conn, self.prefix = rates, conn, prefix
        self.buckets = {}
        self.mu = threading.Lock()

    def bucket(self, name):
        with self.mu:
            b = self.buckets.get(name)
            if b is None:
                b = RedisBucket.init(self.rates, self.conn, self.prefix + "pyrate:" + name)
                self.schedule_leak(b)
                self.buckets[name] = b
            return b

    def wrap_item(self, name, weight=1):
        return RateItem(name, self.bucket(name).now(), weight=weight)

    def get(self, item):
        return self.bucket(item.name)


# The message of try_acquire's own check of a weight (limiter.py:589,
# `assert weight >= 0, "item's weight must be >= 0"`).
WEIGHT_CHECK = "item's weight must be >= 0"


class NegativeWeight(Exception):
    """pyrate-limiter's own refusal of a negative weight."""


class Card:
    # try_acquire refuses a negative weight itself, with an assert
    # (limiter.py:589): that AssertionError, and no other, is the invalid
    # cost (a 400). An assert is gone under `python -O`, and the refusal
    # with it: the shim runs without -O.
    invalid_cost = (NegativeWeight,)

    def __init__(self, redis_url, prefix):
        # A store that is down answers at once (503): short timeouts.
        self.conn = redis.Redis.from_url(redis_url, socket_connect_timeout=1, socket_timeout=1)
        self.prefix = prefix
        self.mu = threading.Lock()
        self.configure(5, 1000)

    def configure(self, limit, window_ms):
        factory = PerUser([Rate(limit, window_ms)], self.conn, self.prefix)
        with self.mu:
            old, self.factory, self.limiter = getattr(self, "limiter", None), factory, Limiter(factory)
        if old is not None:
            old.close()
        return None

    def allow(self, user, cost):
        with self.mu:
            limiter = self.limiter
        try:
            return limiter.try_acquire(user, weight=cost, blocking=False)
        except AssertionError as e:
            if cost < 0 and str(e) == WEIGHT_CHECK:
                raise NegativeWeight(str(e)) from e
            raise

    def remaining(self, user):
        raise NotImplementedError("pyrate-limiter answers no remaining count")

    def reset(self, user):
        with self.mu:
            factory = self.factory
        factory.bucket(user).flush()


def main():
    card = Card(os.environ["RLCONFORM_REDIS_URL"], os.environ.get("RLCONFORM_KEY_PREFIX", ""))
    # Rate intervals are milliseconds; try_acquire takes a weight.
    rlcv1.serve(card, {"clock": False, "configure": True, "remaining": False, "reset": True,
                       "cost": True, "window_granularity_ms": 1})


if __name__ == "__main__":
    main()
