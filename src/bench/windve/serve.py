"""``bench windve serve``: check the configuration and the port, load the model copies, listen (``/health``
says 503 while the instances warm up), print one ``ready`` line once every instance is warm (``/health``
200), serve until SIGTERM/SIGINT, then stop every instance. A failed warm-up ends the process with
status 1 and the reason (the measuring rules see it at once rather than waiting out their timeout)."""
from __future__ import annotations

import asyncio
import signal
import sys

from aiohttp import web

from .app import make_app
from .service import EmbeddingService
from .settings import ServiceConfig, check_port_free


async def _serve(cfg: ServiceConfig, svc: EmbeddingService) -> int:
    runner = web.AppRunner(make_app(svc), access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, cfg.host, cfg.port, backlog=4096, reuse_address=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await site.start()
        print(f"windve listening on http://{cfg.host}:{cfg.port} (warming up)", flush=True)
        stopped = asyncio.ensure_future(stop.wait())
        done, _ = await asyncio.wait({svc.warm_task, stopped}, return_when=asyncio.FIRST_COMPLETED)
        if svc.warm_task in done:
            if svc.warm_task.exception() is not None:
                print(f"windve: {svc.warm_error}", file=sys.stderr, flush=True)
                return 1
            print(f"windve ready on http://{cfg.host}:{cfg.port} devices={','.join(svc.active)}", flush=True)
            await stopped
        return 0
    finally:
        await runner.cleanup()


def run(cfg: ServiceConfig) -> None:
    """Serve ``cfg`` in this process until a signal; bad configuration fails before the model loads."""
    cfg.check()
    check_port_free(cfg.host, cfg.port)
    svc = EmbeddingService(cfg)
    rc = asyncio.run(_serve(cfg, svc))
    if rc:
        raise SystemExit(rc)
