import schemathesis
from schemathesis import GenerationMode
from hypothesis import given, settings as hs, Phase, HealthCheck
from api import openapi

def test_x(db):
    pass

def test_probe(api, test_database_name):
    s = schemathesis.openapi.from_dict(openapi.build_document())
    op = s["/v1/artifacts/delete"]["POST"]
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
        @hs(max_examples=12, derandomize=True, database=None, phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
        @given(case=op.as_strategy(generation_mode=mode))
        def f(case):
            r = case.call(base_url=str(api.base_url).rstrip("/"), headers={"Authorization": f"Bearer {api.token}"})
            print(r.status_code, dict(r.request.headers), r.request.body[:80], r.text[:80])
        f()
