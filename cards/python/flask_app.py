"""Flask-Limiter (4.x from PyPI, cards/python/requirements.txt) as its documentation sets
it up: a Limiter on a Flask app with a default limit of CARD_LIMIT per
CARD_PERIOD seconds per value of the X-User header, on the Redis storage
(storage_uri redis://, its default fixed-window strategy), its headers
enabled (X-RateLimit-Limit, -Remaining, -Reset and Retry-After on a
refusal), in front of a view that answers 200. Its keys carry
RLCONFORM_KEY_PREFIX (key_prefix). With CARD_STORAGE=memory the storage
is limits' in-memory one (storage_uri memory://, Flask-Limiter's default
when none is given). Served by werkzeug's threaded server on
127.0.0.1:$PORT, run by the cards on the interpreter of cards/.venv.
"""

import os

from flask import Flask, request
from flask_limiter import Limiter
from werkzeug.serving import WSGIRequestHandler, run_simple

app = Flask(__name__)
limiter = Limiter(
    lambda: request.headers.get("X-User", ""),
    app=app,
    default_limits=[f"{int(os.environ.get('CARD_LIMIT', '5'))} per {int(os.environ.get('CARD_PERIOD', '1'))} second"],
    storage_uri="memory://" if os.environ.get("CARD_STORAGE") == "memory" else os.environ["RLCONFORM_REDIS_URL"],
    storage_options={} if os.environ.get("CARD_STORAGE") == "memory" else {"socket_connect_timeout": 1, "socket_timeout": 1},
    strategy=os.environ.get("CARD_STRATEGY", "fixed-window"),
    headers_enabled=True,
    key_prefix=os.environ.get("RLCONFORM_KEY_PREFIX", ""),
)


@app.route("/")
def index():
    return "ok\n"


class Handler(WSGIRequestHandler):
    # Answers go out at once on kept-alive connections, not after a
    # delayed ACK.
    disable_nagle_algorithm = True

    def log_request(self, *args, **kwargs):
        pass


if __name__ == "__main__":
    # werkzeug listens with a backlog of 128 (serving.LISTEN_QUEUE).
    run_simple("127.0.0.1", int(os.environ["PORT"]), app, threaded=True, request_handler=Handler)
