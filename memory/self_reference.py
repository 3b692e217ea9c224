"""A question about a person, put in that person's own words for the embedding that searches their messages:
"What kind of dog did Maya adopt?" is embedded as "What kind of dog did I adopt?" when Maya is the subject.
People rarely say their own name, so the name pulls the question's vector away from what they wrote
(docs/decisions.md, "The subject's own words")."""
import re

# A canonical UUID spells no name (its hex runs would read as "bed" or "face"), as in memoir_speaker_name_keys.
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.IGNORECASE)
_LETTER_RUNS = re.compile(r"[^\W\d_]{2,}")
_MAX_NAMES = 16

# A fact `f` that is a speaker's current name, as they gave it ("I'm Caroline"): recall anchors by it too.
CURRENT_NAME_FACT = ("f.predicate = 'has_name' AND upper_inf(f.valid) AND upper_inf(f.known)"
                     " AND (f.retention_until IS NULL OR f.retention_until > now())")
# The names each subject goes by: the name they gave (a current has_name fact of their speaker entity) and the label
# registered with their data subject, said as they are; and the words their registered external reference spells.
# A subject id is a registered subject's only when it is a UUID (the CASE keeps the cast from failing on others).
_SUBJECT_NAMES = (
    "SELECT x.subject, n.name, n.spelled FROM unnest(%(subjects)s::text[]) AS x(subject)"
    " CROSS JOIN LATERAL (SELECT CASE WHEN x.subject ~* %(uuid)s THEN x.subject::uuid END AS id) r"
    " CROSS JOIN LATERAL ("
    " (SELECT o.canonical_name AS name, false AS spelled FROM entity s"
    f" JOIN fact f ON f.subject_entity_id = s.entity_id AND f.scope = s.scope AND {CURRENT_NAME_FACT}"
    " JOIN entity o ON o.entity_id = f.object_entity_id"
    " WHERE s.scope = %(project)s AND s.identity_kind = 'speaker' AND s.speaker_subject_id = x.subject LIMIT 8)"
    " UNION ALL"
    " (SELECT ds.label, false FROM data_subject ds WHERE ds.scope = %(project)s AND ds.label <> ''"
    "  AND ds.subject_id = r.id)"
    " UNION ALL"
    " (SELECT ds.external_reference, true FROM data_subject ds WHERE ds.scope = %(project)s"
    "  AND ds.external_reference IS NOT NULL AND ds.subject_id = r.id)) n"
)


def spelled_names(text):
    """The words a data subject id or external reference spells ("c01-maya" → ["maya"]), lower-cased; none for
    a UUID."""
    if not text or _UUID.match(text):
        return []
    return sorted(set(_LETTER_RUNS.findall(text.lower())))


def names_of(cursor, *, project, subjects):
    """{subject: [(name, proper)]}: the names each of `subjects` goes by, read in one statement. `proper`: a word
    only spelled by an id or a reference ("user" in "user-42"), which stands for the person only where the question
    capitalises it."""
    found = {subject: [(word, True) for word in spelled_names(subject)] for subject in subjects}
    if not found:
        return {}
    cursor.execute(_SUBJECT_NAMES, {"project": project, "subjects": list(found), "uuid": _UUID.pattern})
    for subject, name, spelled in cursor.fetchall():
        if spelled:
            found[subject] += [(word, True) for word in spelled_names(name)]
        else:
            name = " ".join(name.split())
            found[subject].append((name, False))
            if " " in name:  # "Maya Okafor": "Maya" alone names her too, where it is written as a name
                found[subject].append((name.split(" ")[0], True))
    return {subject: _distinct(names) for subject, names in found.items()}


def subject_names(cursor, *, project, subject):
    """[(name, proper)]: the names one subject goes by (names_of)."""
    return names_of(cursor, project=project, subjects=[subject])[subject]


def _distinct(names):
    """One entry per name (case aside), proper only if every way it came is; the longest first, at most _MAX_NAMES."""
    unique = {}
    for name, proper in names:
        if len(name) >= 2:
            unique[name.lower()] = unique.get(name.lower(), True) and proper
    return sorted(unique.items(), key=lambda item: (-len(item[0]), item[0]))[:_MAX_NAMES]


def in_own_words(question, names):
    """`question` with each of `names` ([(name, proper)]) said in the first person: "Maya's" → "my", "Maya" → "I".
    A proper name matches only where the question starts it with a capital letter."""
    for name, proper in names:
        pattern = re.compile(r"(?<![\w'’])" + re.escape(name).replace(r"\ ", r"\s+") + r"(['’]s)?(?![\w'’])",
                             re.IGNORECASE)

        def first_person(match, proper=proper):
            if proper and not match.group(0)[0].isupper():
                return match.group(0)
            return "my" if match.group(1) else "I"

        question = pattern.sub(first_person, question)
    return question
