"""An aiohttp application served on a free 127.0.0.1 port from its own event loop in a thread, for tests
(the WindVE service, the generators' stand-in service); always stopped on exit, even when a test fails."""
from __future__ import annotations

import asyncio
import contextlib
import threading


@contextlib.contextmanager
def serve_app(app, *, on_loop=None, backlog: int = 1024):
    """Serve ``app``; yields its base URL once it listens. ``on_loop``: a coroutine function run first on the
    server's loop (for what must be made there, e.g. an ``asyncio.Lock``)."""
    from aiohttp import web

    from bench.windve.system.service_config import free_port

    port, loop, ready = free_port(), asyncio.new_event_loop(), threading.Event()
    runner = web.AppRunner(app, access_log=None, handle_signals=False)

    async def setup():
        if on_loop is not None:
            await on_loop()
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port, backlog=backlog).start()

    def main():
        asyncio.set_event_loop(loop)
        loop.run_until_complete(setup())
        ready.set()
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())
        loop.close()

    th = threading.Thread(target=main, daemon=True)
    th.start()
    try:
        assert ready.wait(30), "service did not start"
        yield f"http://127.0.0.1:{port}"
    finally:
        loop.call_soon_threadsafe(loop.stop)
        th.join(30)
