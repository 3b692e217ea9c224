"""The extraction model client (formation.md §4, §10) against a real loopback HTTP server (tests/fakemodel.py)."""

import json
import re
import socket
from types import SimpleNamespace

import pytest

from formation import model_client as model_module
from formation.extractor import ExtractorConfigError, build_proposer
from formation.gates import Admitted, effective_unresolvable, judge
from formation.locate import quote_at
from formation.model_client import (
    EXTRACTOR_CODE_VERSION,
    ModelConfig,
    ModelProposer,
    endpoint_origin,
    extraction_version,
    new_fence,
    parse_reply,
    validate_config,
)
from formation.prompt import prompt_sha256, render_system_prompt
from formation.proposals import Message, PredicateSpec, Proposal, ProposerError
from formation.rules import RulesProposer
from memory.vocabulary import PREDICATES, SPEAKER_TERMS, UNRESOLVABLE_TERMS
from tests.fakemodel import fake_model, load_recorded, recorded_names

VOCABULARY = [PredicateSpec(name, st, card, kind, desc, event) for name, st, card, kind, event, desc in PREDICATES]
BY_NAME = {spec.name: spec for spec in VOCABULARY}
UNRESOLVABLE = effective_unresolvable([t for terms in UNRESOLVABLE_TERMS.values() for t in terms], SPEAKER_TERMS)


def proposer_for(server, **overrides) -> ModelProposer:
    config = dict(endpoint=server.base_url, model="test-model", api_key="", timeout=5.0,
                  allowlist=(server.authority,))
    config.update(overrides)
    return ModelProposer(ModelConfig(**config), vocabulary=VOCABULARY, unresolvable=UNRESOLVABLE)


def ask(server, content: str, role: str = "user", **overrides) -> list[Proposal]:
    proposer = proposer_for(server, **overrides)
    try:
        return proposer.propose(Message(role, content), VOCABULARY)
    finally:
        proposer.close()


# --- recorded replies, over HTTP and through the gates ------------------------------------------


@pytest.mark.parametrize("name", recorded_names())
def test_recorded_reply(name):
    recorded = load_recorded(name)
    content, role = recorded["message"]["content"], recorded["message"]["role"]
    with fake_model({content: recorded["reply"]}) as server:
        if "error" in recorded["expect"]:
            with pytest.raises(ProposerError, match=re.escape(recorded["expect"]["error"])):
                ask(server, content, role)
            return
        proposals = ask(server, content, role)
        assert server.requests[0].content == content  # the whole message reached the model, fenced
    admitted: set = set()
    outcomes = []
    for proposal, expected in zip(proposals, recorded["expect"]["outcomes"], strict=True):
        result = judge(proposal, content=content, vocabulary=BY_NAME, unresolvable=UNRESOLVABLE, admitted=admitted)
        assert (proposal.predicate, proposal.object) == (expected["predicate"], expected["object"])
        outcomes.append("admitted" if isinstance(result, Admitted) else result.reason)
        if isinstance(result, Admitted):
            assert [result.byte_start, result.byte_end] == expected["span"]
            assert result.quote == expected["quote"] == quote_at(content, result.byte_start, result.byte_end)
    assert outcomes == [expected["outcome"] for expected in recorded["expect"]["outcomes"]]


def test_injected_end_marker_does_not_close_the_fence():
    recorded = load_recorded("tool_injection")
    content = recorded["message"]["content"]
    with fake_model({content: recorded["reply"]}) as server:
        ask(server, content, "tool")
    (request,) = server.requests
    forged = re.search(r"<<<end ([0-9a-f]{24})>>>", content).group(1)
    assert request.fence != forged and request.fence not in content
    assert request.content == content
    assert request.body["messages"][1]["content"].startswith("Speaker: tool\n\n")


# --- the request ---------------------------------------------------------------------------------


def test_request_shape():
    content = "I live in Dublin."
    with fake_model({}) as server:
        assert ask(server, content, api_key="sk-test") == []  # unknown content → {"claims": []}
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["Authorization"] == "Bearer sk-test"
    body = request.body
    assert set(body) == {"model", "temperature", "messages", "response_format"}  # no max_tokens, tools or seed
    assert body["model"] == "test-model"
    assert body["temperature"] == 0
    assert body["response_format"] == {"type": "json_object"}
    system, user = body["messages"]
    assert system == {"role": "system", "content": render_system_prompt(VOCABULARY)}
    listed = [line.split()[0] for line in system["content"].split("\n") if re.match(r"  [a-z_]+ +object is a ", line)]
    assert listed == sorted(spec.name for spec in VOCABULARY) and len(listed) == len(VOCABULARY)
    assert user["role"] == "user"
    lines = user["content"].split("\n")
    assert lines[0] == "Speaker: user" and lines[1] == "" and lines[3] == ""
    assert "between" in lines[2] and "data" in lines[2]
    fence = request.fence
    assert re.fullmatch(r"[0-9a-f]{24}", fence) and fence not in content
    assert lines[4:] == [f"<<<message {fence}>>>", content, f"<<<end {fence}>>>"]


def test_no_authorization_header_without_a_key():
    with fake_model({}) as server:
        ask(server, "hello")
    assert "Authorization" not in server.requests[0].headers


def test_each_call_gets_a_fresh_fence():
    with fake_model({}) as server:
        proposer = proposer_for(server)
        for _ in range(3):
            proposer.propose(Message("user", "hello"), VOCABULARY)
        proposer.close()
    fences = {request.fence for request in server.requests}
    assert len(fences) == 3


def test_fence_is_regenerated_when_it_occurs_in_the_content(monkeypatch):
    values = iter(["a" * 24, "b" * 24])
    monkeypatch.setattr(model_module.secrets, "token_hex", lambda n: next(values))
    assert new_fence("prefix " + "a" * 24 + " suffix") == "b" * 24


# --- errors --------------------------------------------------------------------------------------


def test_server_error_is_a_fixed_category_with_its_status_and_no_reply_text():
    secret = "customer words " * 400
    with fake_model({"hi": {"status": 500, "body": secret}}) as server, pytest.raises(ProposerError) as caught:
        ask(server, "hi")
    assert str(caught.value) == "model endpoint answered HTTP 500"


@pytest.mark.parametrize("content", [
    "I cannot do that: the user said my address is 12 Quay Street",
    '{"claims": ["the user said my address is 12 Quay Street"]}',
    '{"claims": [{"predicate": 7, "statement": "the user said my address is 12 Quay Street"}]}',
    '{"claims": [{"confidence": "the user said my address is 12 Quay Street"}]}',
])
def test_a_reply_quoting_the_message_leaves_no_words_in_the_error(content):
    with fake_model({"hi": {"content": content}}) as server, pytest.raises(ProposerError) as caught:
        ask(server, "hi")
    text = str(caught.value)
    assert text.startswith("model reply")
    assert "Quay" not in text and "address" not in text and "user said" not in text


def test_redirect_is_not_followed():
    with fake_model({}) as server:
        target = server.base_url + "/elsewhere"
        server.set_replies({"hi": {"status": 307, "headers": {"Location": target}}})
        with pytest.raises(ProposerError, match="redirect"):
            ask(server, "hi")
    assert len(server.requests) == 1


def test_body_over_one_mebibyte_is_refused():
    huge = json.dumps({"claims": [], "padding": "x" * (1024 * 1024)})
    with fake_model({"hi": huge}) as server, pytest.raises(ProposerError, match="exceeds"):
        ask(server, "hi")


def test_timeout_is_an_error():
    with fake_model({"hi": {"content": '{"claims": []}', "delay": 1.0}}) as server:
        with pytest.raises(ProposerError, match="Timeout"):
            ask(server, "hi", timeout=0.2)


def test_connection_refused_is_an_error():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = ModelConfig(endpoint=f"http://127.0.0.1:{port}/v1", model="m", timeout=2.0,
                         allowlist=(f"127.0.0.1:{port}",))
    proposer = ModelProposer(config, vocabulary=VOCABULARY, unresolvable=UNRESOLVABLE)
    with pytest.raises(ProposerError, match="model request failed"):
        proposer.propose(Message("user", "hi"), VOCABULARY)


@pytest.mark.parametrize(
    "body",
    ['{"choices": []}', '{"choices": [{"message": {}}]}', '{"choices": [{"message": {"content": null}}]}', "[]"],
)
def test_completion_without_content_is_an_error(body):
    with fake_model({"hi": {"body": body}}) as server, pytest.raises(ProposerError):
        ask(server, "hi")


def test_vocabulary_must_match_the_version():
    with fake_model({}) as server:
        proposer = proposer_for(server)
        with pytest.raises(ProposerError, match="vocabulary"):
            proposer.propose(Message("user", "hi"), VOCABULARY[:5])
        # Order does not matter: the vocabulary is always taken in name order.
        assert proposer.propose(Message("user", "hi"), list(reversed(VOCABULARY))) == []
        proposer.close()


# --- reply parsing -------------------------------------------------------------------------------

CLAIM = {"subject": "I", "predicate": "lives_in", "object": "Dublin", "statement": "I live in Dublin.",
         "confidence": 0.5, "quote": "I live in Dublin", "polarity": "asserted", "tense": "present"}


def envelope(*claims) -> str:
    return json.dumps({"claims": list(claims)})


def test_parse_plain_and_fenced():
    assert parse_reply(envelope(CLAIM))[0].object == "Dublin"
    assert parse_reply("```json\n" + envelope(CLAIM) + "\n```")[0].object == "Dublin"
    assert parse_reply("```\n" + envelope() + "\n```") == []


def test_text_around_the_envelope_is_ignored():
    assert len(parse_reply("Sure! " + envelope(CLAIM) + " Hope that helps {")) == 1


def test_objects_without_a_claims_list_are_skipped():
    text = json.dumps(CLAIM) + " " + json.dumps({"claims": "none"}) + " " + envelope(CLAIM, CLAIM)
    assert len(parse_reply(text)) == 2


def test_only_the_first_32_braces_are_scanned():
    assert parse_reply("{" * 31 + envelope()) == []
    with pytest.raises(ProposerError, match="no claims envelope"):
        parse_reply("{" * 32 + envelope())


@pytest.mark.parametrize("text", ["", "no json here", "[]", '{"claim": []}', "null", '{"claims": {}}'])
def test_no_envelope_is_an_error_never_empty(text):
    with pytest.raises(ProposerError, match="no claims envelope"):
        parse_reply(text)


@pytest.mark.parametrize(
    "claim",
    ["a string", 3, None, [CLAIM], {**CLAIM, "object": 7}, {**CLAIM, "polarity": ["asserted"]},
     {**CLAIM, "confidence": "high"}, {**CLAIM, "confidence": True}, {**CLAIM, "confidence": 10**400}],
)
def test_wrong_shapes_are_errors(claim):
    with pytest.raises(ProposerError):
        parse_reply(envelope(claim))


def test_missing_fields_read_as_empty():
    (p,) = parse_reply(envelope({"predicate": "lives_in", "object_type": None}))
    assert p == Proposal(subject="", predicate="lives_in", object="", statement="", confidence=0.0, quote="",
                         polarity="", tense="", subject_type="", object_type="")


def test_confidence_is_passed_through_for_the_gates_to_clamp():
    assert parse_reply(envelope({**CLAIM, "confidence": 7}))[0].confidence == 7.0
    assert parse_reply('{"claims": [{"confidence": NaN}]}')[0].confidence != 0.5


def test_absurd_nesting_is_an_error_not_a_crash():
    with pytest.raises(ProposerError):
        parse_reply("{" + '"a":[' * 200_000)
    with pytest.raises(ProposerError):
        parse_reply('{"claims": ' + "[" * 200_000)


def test_parse_errors_carry_none_of_the_reply():
    reply = "z" * 5000
    with pytest.raises(ProposerError) as caught:
        parse_reply(reply)
    assert str(caught.value) == "model reply has no claims envelope"


def test_proposer_error_is_bounded():
    assert len(str(ProposerError("e" * 10_000))) == 2000


# --- configuration and version -------------------------------------------------------------------


def config(**overrides) -> ModelConfig:
    values = dict(endpoint="https://models.example.com/v1", model="m", allowlist=("models.example.com:443",))
    values.update(overrides)
    return ModelConfig(**values)


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"endpoint": "http://localhost:8080/v1", "allowlist": ("localhost:8080",)},
        {"endpoint": "http://127.0.0.1:11434", "allowlist": ("127.0.0.1:11434",)},
        {"endpoint": "http://[::1]:8000/v1", "allowlist": ("[::1]:8000",)},
        {"endpoint": "http://host.docker.internal:1234/v1", "allowlist": ("host.docker.internal:1234",)},
        {"endpoint": "https://models.example.com:8443/v1", "allowlist": ("other:1", " models.example.com:8443 ")},
    ],
)
def test_valid_configs(overrides):
    validate_config(config(**overrides))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"endpoint": "http://models.example.com/v1", "allowlist": ("models.example.com:80",)}, "https"),
        ({"allowlist": ()}, "not in MEMOIR_EXTRACTION_ALLOWLIST"),
        ({"allowlist": ("models.example.com",)}, "not in MEMOIR_EXTRACTION_ALLOWLIST"),
        ({"allowlist": ("models.example.com:8443",)}, "not in MEMOIR_EXTRACTION_ALLOWLIST"),
        ({"endpoint": "ftp://models.example.com/v1"}, "http"),
        ({"endpoint": "https://user:pw@models.example.com/v1"}, "credentials"),
        ({"endpoint": "https://models.example.com/v1?x=1"}, "query"),
        ({"model": " "}, "MODEL"),
        ({"timeout": 0}, "TIMEOUT"),
    ],
)
def test_invalid_configs(overrides, message):
    with pytest.raises(ExtractorConfigError, match=message):
        validate_config(config(**overrides))


def test_endpoint_origin():
    assert endpoint_origin("https://Models.Example.com/v1") == "https://models.example.com:443"
    assert endpoint_origin("http://[::1]:8000/v1") == "http://[::1]:8000"


def test_extraction_version():
    base = dict(model="m", endpoint_origin="https://h:443", prompt_sha=prompt_sha256(),
                code_version=EXTRACTOR_CODE_VERSION, vocabulary=VOCABULARY, unresolvable_terms=UNRESOLVABLE)
    version = extraction_version(**base)
    assert re.fullmatch(r"extract/v2:[a-f0-9]{64}", version)
    assert extraction_version(**{**base, "unresolvable_terms": sorted(UNRESOLVABLE, reverse=True)}) == version
    changed = [
        {"model": "m2"}, {"endpoint_origin": "https://h:8443"}, {"prompt_sha": "0" * 64}, {"code_version": "x"},
        {"vocabulary": VOCABULARY[:-1]}, {"unresolvable_terms": UNRESOLVABLE - {"he"}},
        {"vocabulary": [*VOCABULARY[:-1], PredicateSpec(**{**VOCABULARY[-1].__dict__, "event": True})]},
    ]
    for change in changed:
        assert extraction_version(**{**base, **change}) != version, change


def test_proposer_version_pins_model_and_endpoint():
    with fake_model({}) as server:
        one = proposer_for(server)
        assert re.fullmatch(r"extract/v2:[a-f0-9]{64}", one.version)
        assert proposer_for(server).version == one.version
        assert proposer_for(server, model="other").version != one.version
        shuffled = ModelProposer(one.config, vocabulary=list(reversed(VOCABULARY)), unresolvable=UNRESOLVABLE)
        assert shuffled.version == one.version  # always taken in name order, as the prompt lists it


# --- choosing the proposer from settings ---------------------------------------------------------


def settings(**values):
    base = dict(MEMOIR_EXTRACTOR="auto", MEMOIR_EXTRACTION_ENDPOINT="", MEMOIR_EXTRACTION_API_KEY="",
                MEMOIR_EXTRACTION_MODEL="", MEMOIR_EXTRACTION_ALLOWLIST="", MEMOIR_MODEL_TIMEOUT=120.0)
    base.update(values)
    return SimpleNamespace(**base)


def build(**values):
    return build_proposer(vocabulary=VOCABULARY, unresolvable=UNRESOLVABLE, settings_obj=settings(**values))


MODEL_SETTINGS = dict(MEMOIR_EXTRACTION_ENDPOINT="http://127.0.0.1:9/v1", MEMOIR_EXTRACTION_MODEL="m",
                      MEMOIR_EXTRACTION_ALLOWLIST="example.com:443, 127.0.0.1:9")


def test_auto_without_a_model_is_rules():
    assert isinstance(build(), RulesProposer)


def test_auto_with_a_model_is_the_model():
    proposer = build(**MODEL_SETTINGS, MEMOIR_MODEL_TIMEOUT="30")
    assert isinstance(proposer, ModelProposer)
    assert proposer.config.allowlist == ("example.com:443", "127.0.0.1:9") and proposer.config.timeout == 30.0


def test_rules_is_always_rules():
    assert isinstance(build(MEMOIR_EXTRACTOR="rules", **MODEL_SETTINGS), RulesProposer)


@pytest.mark.parametrize("missing", ["MEMOIR_EXTRACTION_ENDPOINT", "MEMOIR_EXTRACTION_MODEL", "MEMOIR_EXTRACTION_ALLOWLIST"])
@pytest.mark.parametrize("mode", ["auto", "model"])
def test_partial_model_settings_are_a_startup_error(mode, missing):
    with pytest.raises(ExtractorConfigError, match=missing):
        build(MEMOIR_EXTRACTOR=mode, **{**MODEL_SETTINGS, missing: ""})


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"MEMOIR_EXTRACTOR": "model"}, "no model is configured"),
        ({"MEMOIR_EXTRACTOR": "model", **MODEL_SETTINGS, "MEMOIR_EXTRACTION_ALLOWLIST": "example.com:443"},
         "ALLOWLIST"),
        ({**MODEL_SETTINGS, "MEMOIR_EXTRACTION_ENDPOINT": "http://models.example.com/v1"}, "https"),
        ({**MODEL_SETTINGS, "MEMOIR_MODEL_TIMEOUT": "soon"}, "TIMEOUT"),
        ({"MEMOIR_EXTRACTOR": "magic"}, "MEMOIR_EXTRACTOR"),
    ],
)
def test_unusable_settings_never_fall_back_to_rules(values, message):
    with pytest.raises(ExtractorConfigError, match=message):
        build(**values)
