"""gunicorn settings every server of this repository shares (`make run`, the tests' and benches' servers): gunicorn
reads this file from the working directory, which is the repository root for all of them."""

# An idle keep-alive connection is closed by the client first, never by the server: with gunicorn's default of 2 s,
# a client that pauses about 2 s (an agent between turns, a poll loop) sends its next request on a socket the server
# is closing and gets a reset or "server disconnected" instead of an answer. Client pools expire idle connections
# sooner (httpx 5 s, aiohttp 15 s).
keepalive = 75
