"""The servers keep an idle keep-alive connection open longer than clients pause (gunicorn.conf.py): a client that
waits a few seconds between requests reuses its connection instead of meeting one the server has just closed."""
import http.client
import time
from urllib.parse import urlsplit

import pytest


@pytest.mark.live
def test_an_idle_connection_is_still_served_after_a_clients_pause(live_server_url):
    url = urlsplit(live_server_url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    try:
        connection.request("GET", "/health")
        first = connection.getresponse()
        first.read()
        assert first.status == 200 and not first.will_close
        opened = connection.sock
        time.sleep(3)  # past gunicorn's default keep-alive (2 s), within a client pool's idle expiry (httpx: 5 s)
        try:
            connection.request("GET", "/health")
            second = connection.getresponse()
            second.read()
            status = second.status
        except (http.client.RemoteDisconnected, ConnectionError):
            status = None  # the server closed the idle connection
        assert status == 200 and connection.sock is opened
    finally:
        connection.close()
