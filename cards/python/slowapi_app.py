"""slowapi (cards/python/requirements.txt) as its documentation sets it up
on a Starlette app: a Limiter with a default limit of CARD_LIMIT per
CARD_PERIOD seconds per value of the X-User header (key_func), on the
Redis storage (storage_uri redis://, limits' fixed-window strategy, its
default), its headers enabled (X-RateLimit-Limit, -Remaining, -Reset and
Retry-After), app.state.limiter, the RateLimitExceeded handler it ships
(_rate_limit_exceeded_handler: 429) and its SlowAPIMiddleware, which
applies the default limits to every route, in front of a route that
answers 200. Its keys carry RLCONFORM_KEY_PREFIX (key_prefix). With
CARD_STORAGE=memory the storage is limits' in-memory one (memory://,
slowapi's default when none is given). Served by uvicorn (one worker) on
127.0.0.1:$PORT, run by the cards on the interpreter of cards/.venv.
"""

import os

import uvicorn
from slowapi import Limiter, _rate_limit_exceeded_handler
from slowapi.errors import RateLimitExceeded
from slowapi.middleware import SlowAPIMiddleware
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

limiter = Limiter(
    key_func=lambda request: request.headers.get("X-User", ""),
    default_limits=[f"{int(os.environ.get('CARD_LIMIT', '5'))} per {int(os.environ.get('CARD_PERIOD', '1'))} second"],
    storage_uri="memory://" if os.environ.get("CARD_STORAGE") == "memory" else os.environ["RLCONFORM_REDIS_URL"],
    storage_options={} if os.environ.get("CARD_STORAGE") == "memory" else {"socket_connect_timeout": 1, "socket_timeout": 1},
    headers_enabled=True,
    key_prefix=os.environ.get("RLCONFORM_KEY_PREFIX", ""),
)


async def index(request):
    return PlainTextResponse("ok\n")


app = Starlette(routes=[Route("/", index)])
app.state.limiter = limiter
app.add_exception_handler(RateLimitExceeded, _rate_limit_exceeded_handler)
app.add_middleware(SlowAPIMiddleware)


if __name__ == "__main__":
    # uvicorn listens with a backlog of 2048 (Config.backlog).
    uvicorn.run(app, host="127.0.0.1", port=int(os.environ["PORT"]), log_level="warning", access_log=False)
