"""The python `limits` library (5.x from PyPI, cards/python/requirements.txt)
over rlconform's protocol v1 (rlcv1.py), on its Redis storage
(RedisStorage, redis://, redis-py).

Every decision is the library's: a request is `strategy.hit(item, user,
cost=n)`, what remains `strategy.get_window_stats(item, user)[1]`, a reset
`strategy.clear(item, user)`; the shim only translates calls. The item is
`RateLimitItemPerSecond(N, W seconds)` under the namespace "LIMITER", on
a storage whose key_prefix is RLCONFORM_KEY_PREFIX + "LIMITS", so that
every key the library writes starts with the prefix. CARD_STRATEGY names
the strategy as the library's own registry does
(limits.strategies.STRATEGIES): fixed-window, moving-window or
sliding-window-counter. With CARD_STORAGE=memory the storage is the
library's in-memory one (MemoryStorage, memory://), in this process: one
instance, graded as one --target. Run by cards/python/serve.
"""

import os
import sys

from limits import RateLimitItemPerSecond
from limits.storage import MemoryStorage, RedisStorage
from limits.strategies import STRATEGIES

import rlcv1


class Card:
    """The strategy on its storage, and the item in force."""

    def __init__(self, strategy, redis_url, prefix):
        if redis_url is None:
            self.storage = MemoryStorage()
        else:
            # A store that is down answers at once (503): short timeouts.
            self.storage = RedisStorage(redis_url, key_prefix=prefix + "LIMITS", socket_connect_timeout=1, socket_timeout=1)
        self.strategy = STRATEGIES[strategy](self.storage)
        self.item = RateLimitItemPerSecond(5, 1, namespace="LIMITER")

    def configure(self, limit, window_ms):
        if window_ms % 1000:
            return f"limits' items are whole seconds (window_ms {window_ms})"
        # Every key holds N and W (RateLimitItem.key_for): a new item.
        self.item = RateLimitItemPerSecond(limit, window_ms // 1000, namespace="LIMITER")
        return None

    def allow(self, user, cost):
        # hit(cost=n) as given: the library checks no sign nor size.
        return self.strategy.hit(self.item, user, cost=cost)

    def remaining(self, user):
        return self.strategy.get_window_stats(self.item, user)[1]

    def reset(self, user):
        self.strategy.clear(self.item, user)


def main():
    strategy = os.environ.get("CARD_STRATEGY", "fixed-window")
    if strategy not in STRATEGIES:
        sys.exit(f"CARD_STRATEGY {strategy!r}: want one of {sorted(STRATEGIES)}")
    memory = os.environ.get("CARD_STORAGE") == "memory"
    card = Card(strategy, None if memory else os.environ["RLCONFORM_REDIS_URL"], os.environ.get("RLCONFORM_KEY_PREFIX", ""))
    # hit(cost=n) takes a weight; the items are whole seconds.
    rlcv1.serve(card, {"clock": False, "configure": True, "remaining": True, "reset": True,
                       "cost": True, "window_granularity_ms": 1000})


if __name__ == "__main__":
    main()
