"""``bench windve serve``: check the configuration and the port, load the model copies, serve until
SIGTERM/SIGINT, then stop every instance. Prints one ``ready`` line when /health can answer."""
from __future__ import annotations

import asyncio
import signal

from aiohttp import web

from .service import EmbeddingService, make_app
from .settings import ServiceConfig, check_port_free


async def _serve(cfg: ServiceConfig, svc: EmbeddingService) -> None:
    runner = web.AppRunner(make_app(svc), access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, cfg.host, cfg.port, backlog=4096, reuse_address=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await site.start()
        print(f"windve ready on http://{cfg.host}:{cfg.port} devices={','.join(svc.active)}", flush=True)
        await stop.wait()
    finally:
        await runner.cleanup()


def run(cfg: ServiceConfig) -> None:
    """Serve ``cfg`` in this process until a signal; bad configuration fails before the model loads."""
    cfg.check()
    check_port_free(cfg.host, cfg.port)
    svc = EmbeddingService(cfg)
    asyncio.run(_serve(cfg, svc))
