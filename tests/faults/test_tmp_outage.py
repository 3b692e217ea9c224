import time
from tests.conftest import make_project
from tests.formation.test_worker import freshness, observe
from tests.support.processes import CeleryWorker, RedisProcess, WebServer, service_env, wait_for


def test_long_outage(test_database_name, committed):
    project, token, _ = make_project(committed)
    redis = RedisProcess().start()
    env = service_env(test_database_name, redis.url, MEMOIR_FORMATION_INTERVAL=1, MEMOIR_EXTRACTOR="rules")
    web = WebServer(env, workers=1, threads=4).start()
    worker = CeleryWorker(env, beat=True).start()
    try:
        assert observe(web.url, token, "I speak Irish.")[0].status_code == 201
        wait_for(lambda: freshness(web.url, token)["formed"] == 0, 30)
        redis.stop()
        for i in range(3):
            r, s = observe(web.url, token, f"I use Tool{i}.")
            print("down observe", r.status_code, round(s, 2))
            time.sleep(5)
        redis.start()
        wait_for(lambda: freshness(web.url, token)["formed"] == 3, 60)
        assert worker.proc.poll() is None
    finally:
        worker.stop(); web.stop(); redis.stop()
        print(open(worker.log.name).read()[-3000:])
