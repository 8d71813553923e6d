"""``python -m ai_platform.serving --model-dir DIR [--name NAME] [--host H] [--port 0] [--url-file PATH]``

Binds (port 0: a free one), writes ``http://host:port`` to --url-file once the model is loaded, serves until SIGTERM,
then reports not-ready, finishes the requests in flight and exits 0.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m ai_platform.serving", description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", default=os.environ.get("AIPOOL_MODEL_SERVE_PATH"), help="the model's files")
    parser.add_argument("--name", default=os.environ.get("AIPOOL_SERVING_NAME", "model"))
    parser.add_argument("--host", default=os.environ.get("AIPOOL_SERVING_BIND", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--url-file", default=os.environ.get("AIPOOL_SERVING_URL_FILE"))
    return parser.parse_args(argv)


# One BLAS thread per request: requests are served on threads of their own, and a BLAS pool per request
# oversubscribes the replica's CPUs (20x slower for a batch of one on a busy node). Set before numpy loads.
BLAS_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    args = parse_args(argv)
    for name in BLAS_THREAD_VARIABLES:
        os.environ.setdefault(name, "1")
    from ai_platform.serving.model import ModelError, load_model
    from ai_platform.serving.server import ModelServer, advertised_url, publish_url

    if not args.model_dir:
        print("error: no model directory (--model-dir or AIPOOL_MODEL_SERVE_PATH)", file=sys.stderr)
        return 2
    server = ModelServer((args.host, args.port))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        server.set_model(load_model(args.model_dir, name=args.name))
    except ModelError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    url = advertised_url(server, args.host)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    thread.start()
    if args.url_file:
        publish_url(args.url_file, url)
    print(f"serving {args.name} on {url}", flush=True)
    stop.wait()
    server.draining = True
    server.shutdown()
    server.server_close()  # joins the threads of requests still in flight
    print(f"stopped after {server.served} predictions", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
