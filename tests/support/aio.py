"""Running the official async clients from sync tests.

Each coroutine runs on its own thread with its own event loop: Playwright's sync API (the console tests)
leaves a running loop on the main thread, where asyncio.run() would refuse to start."""
import asyncio
from concurrent.futures import ThreadPoolExecutor


def run_async(coro):
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()
