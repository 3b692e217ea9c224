"""The subject's own words: a question about the person whose messages are searched is embedded in the first person
("What did Maya adopt?" → "What did I adopt?"), by the names they gave, their registered label and what their id
or external reference spells; the lexical half and the answer's shape are unchanged."""
import uuid

import pytest
from django.db import connection

from formation.driver import drain
from formation.rules_v2 import RulesV2Proposer
from governance.subjects import register_subject
from memory import passages, self_reference
from memory.self_reference import in_own_words, spelled_names
from tests.passages.test_passages import build_all
from tests.recall.conftest import observe_turn, recall_ok

MAYA = "c01-maya"


def embedded_texts(fake):
    return [text for _, _, body in fake.requests if body for text in body["input"]]


def test_names_are_said_in_the_first_person():
    names = [("maya okafor", False), ("maya", True)]
    assert in_own_words("What kind of dog did Maya adopt?", names) == "What kind of dog did I adopt?"
    assert in_own_words("What is Maya’s dog called? And Maya Okafor's cat?", names) == \
        "What is my dog called? And my cat?"
    # A word only an id spells stands for the person where the question writes it as a name.
    assert in_own_words("what did maya say to the user?", names) == "what did maya say to the user?"
    assert in_own_words("What did Maya say?", [("maya", False)]) == "What did I say?"
    assert in_own_words("what did maya say?", [("maya", False)]) == "what did I say?"  # a label, said as given
    # Whole words only.
    assert in_own_words("Did Mayan ruins or Amaya come up?", [("maya", False)]) == "Did Mayan ruins or Amaya come up?"


def test_what_an_id_or_a_reference_spells():
    assert spelled_names("c01-maya") == ["maya"]
    assert spelled_names("Maya.Okafor@example.com") == ["com", "example", "maya", "okafor"]
    assert spelled_names(str(uuid.uuid4())) == []


@pytest.mark.django_db
def test_the_names_a_subject_goes_by(project):
    observe_turn(project, "I'm Caroline, by the way. I live in Boston.", subject=MAYA)
    drain(project, proposer=RulesV2Proposer())  # a has_name fact of MAYA's speaker
    registered, _ = register_subject(project=project, idempotency_key=str(uuid.uuid4()), label="Ana  Lima",
                                     external_reference="ana.lima@example.org", principal="operator",
                                     principal_kind="operator")
    with connection.cursor() as cursor:
        maya = dict(self_reference.subject_names(cursor, project=project, subject=MAYA))
        ana = dict(self_reference.subject_names(cursor, project=project, subject=registered.id))
        nobody = self_reference.subject_names(cursor, project=project, subject="zz-9")
        both = self_reference.names_of(cursor, project=project, subjects=[MAYA, registered.id])  # one statement
    assert both == {MAYA: sorted(maya.items(), key=lambda n: (-len(n[0]), n[0])),
                    registered.id: sorted(ana.items(), key=lambda n: (-len(n[0]), n[0]))}
    assert maya == {"caroline": False, "maya": True}
    # The label as registered names her however written; its words and her reference's only as names.
    assert ana["ana lima"] is False and ana["ana"] is True and ana["lima"] is True and ana["example"] is True
    assert nobody == [("zz", True)]


@pytest.mark.django_db
def test_a_subjects_search_embeds_the_question_in_their_own_words(project, fake, endpoint_embedder):
    adopted = observe_turn(project, "I adopted a beagle called Biscuit last spring.", subject=MAYA)
    observe_turn(project, "Maya told me about her dog.", subject="c01-tom")
    build_all(project, endpoint_embedder)
    fake.requests.clear()
    found = passages.search(project=project, question="What kind of dog did Maya adopt?", data_subject_id=MAYA)
    assert embedded_texts(fake) == ["What kind of dog did I adopt?"]
    assert [h.source_id for h in found.hits] == [adopted.id]  # only Maya's messages, as before
    fake.requests.clear()
    passages.search(project=project, question="What kind of dog did Maya adopt?")  # no subject: as asked
    assert embedded_texts(fake) == ["What kind of dog did Maya adopt?"]


@pytest.mark.django_db
def test_a_recall_naming_a_speaker_embeds_the_question_again_in_their_words(project, auth, fake, endpoint_embedder):
    registered, _ = register_subject(project=project, idempotency_key=str(uuid.uuid4()), label="Maya",
                                     principal="operator", principal_kind="operator")
    maya = registered.id
    adopted = observe_turn(project, "I adopted a beagle called Biscuit last spring.", subject=maya)
    observe_turn(project, "Maya told me about her dog.", subject="c01-tom")
    build_all(project, endpoint_embedder)
    fake.requests.clear()
    bundle = recall_ok(auth, question="What kind of dog did Maya adopt?")
    assert sorted(embedded_texts(fake)) == ["What kind of dog did I adopt?", "What kind of dog did Maya adopt?"]
    assert bundle["passages"][0]["source_id"] == adopted.id
    fake.requests.clear()
    recall_ok(auth, question="What kind of dog did Maya adopt?", data_subject_id=maya)
    assert embedded_texts(fake) == ["What kind of dog did I adopt?"]
