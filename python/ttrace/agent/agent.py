"""`serve(tracer, reference)`: set up the agent on every rank and run the serve loop."""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

from .hello_info import hello_info, merge_summaries
from .own_capture import OwnCapture
from .rank_channel import RankChannel
from .rank_gate import RankGate
from .rank_worker import RankWorker
from .reference_feed import ReferenceFeed
from .replay_context import ReplayContext
from .serve_config import ServeConfig
from .serve_loop import ServeLoop
from .served_ranks import ServedRanksWorker
from .socket_server import SocketServer
from .token_file import default_token_path, new_token, write_private

log = logging.getLogger("ttrace.agent")


def _start_server(
    config: ServeConfig,
    tracer: Any,
    channel: RankChannel,
    feed: ReferenceFeed,
    summaries: list[bytes],
) -> SocketServer:
    why = merge_summaries([json.loads(s.decode("utf-8")) for s in summaries])
    hello = hello_info(tracer.out_dir, config.reference, channel.world_size, why)
    # A relaunch by `ttrace serve` says so, with what changed in the code since capture.
    hello.update(getattr(tracer, "replay_hello", {}))
    modules = [m["name"] for m in hello["modules"]]
    token = new_token()
    server = SocketServer(config.host, config.port, token, hello, modules, feed.variants)
    try:
        token_path = config.token_file or default_token_path(server.port)
        write_private(token_path, token + "\n")
        if config.endpoint_file is not None:
            write_private(config.endpoint_file, f"{config.host}:{server.port}\n")
    except OSError:
        server.close_unstarted()
        raise
    print(
        f"ttrace agent: serving {tracer.out_dir} on tcp://{config.host}:{server.port} "
        f"(token in {token_path}; idle timeout {config.idle_timeout:g} s)",
        file=sys.stderr,
        flush=True,
    )
    server.start()
    return server


def _setup(tracer: Any, reference: Any, options: dict[str, Any], channel: RankChannel) -> tuple:
    config = ServeConfig.resolve(reference, **options)
    layout = getattr(tracer, "relaunch_layout", None)
    if layout is not None and layout.served != (tracer.rank,):  # serving other captured ranks
        served = ServedRanksWorker(tracer, config.reference, layout, channel)
        return config, served.own, served.feed, served
    own = OwnCapture(tracer.out_dir, tracer.rank)
    feed = ReferenceFeed(config.reference, own)
    worker = RankWorker(ReplayContext(tracer, feed, tracer.rank), RankGate(channel, tracer.rank))
    return config, own, feed, worker


def _agree(channel: RankChannel, failure: BaseException | None) -> None:
    """Every rank raises when any rank failed to start (none is left waiting)."""
    _, stop = channel.sync(0, failure is not None)
    if failure is not None:
        raise failure
    if stop:
        raise RuntimeError("ttrace agent: another rank failed to start serving (see its log)")


def serve(tracer: Any, reference: Any = None, **options: Any) -> None:
    """Collective over the default process group: every rank must call it."""
    channel = RankChannel()
    failure: BaseException | None = None
    try:
        config, own, feed, worker = _setup(tracer, reference, options, channel)
    except Exception as exc:
        failure = exc
    _agree(channel, failure)
    summaries = channel.gather(json.dumps(worker.summary()).encode("utf-8"))
    server: SocketServer | None = None
    if channel.rank == 0:
        try:
            server = _start_server(config, tracer, channel, feed, summaries or [])
        except Exception as exc:
            failure = exc
    _agree(channel, failure)
    try:
        ServeLoop(channel, worker, server, config.idle_timeout).run()
    finally:
        if server is not None:
            server.stop()
        own.close()
        feed.reader.close()
