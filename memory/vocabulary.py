"""The seeded vocabulary: 39 predicates, 43 unresolvable terms and 8 speaker terms (data-model.md §3).

Changed only by migrations; the data migration reads these tuples once.
"""

# (predicate, semantic_type, cardinality, object_kind, event, description)
PREDICATES = (
    ("has_name", "identity", "one", "value", False, "what the subject is called"),
    ("has_role", "identity", "one", "value", False, "the subject's job title, position or function"),
    ("works_at", "identity", "many", "organisation", False, "the subject is employed by or works for the organisation"),
    ("member_of", "identity", "many", "organisation", False, "the subject belongs to the group, club or body"),
    ("lives_in", "identity", "one", "place", False, "where the subject currently lives"),
    ("born_in", "identity", "one", "place", True, "where the subject was born"),
    ("speaks", "identity", "many", "value", False, "a language the subject speaks"),
    ("has_contact", "identity", "many", "value", False, "a way to reach the subject (address, number, handle)"),
    ("has_timezone", "identity", "one", "value", False, "the time zone the subject keeps"),
    ("prefers", "preference", "many", "thing", False, "something the subject likes or favours"),
    ("dislikes", "preference", "many", "thing", False, "something the subject dislikes or avoids"),
    ("interested_in", "preference", "many", "thing", False, "a topic or activity the subject is interested in"),
    ("knows_about", "capability", "many", "thing", False, "a field the subject has knowledge of or expertise in"),
    ("uses", "capability", "many", "thing", False, "a tool, product or method the subject uses"),
    ("learning", "capability", "many", "thing", False, "something the subject is currently learning"),
    ("intends_to", "intent", "many", "thing", False, "something the subject plans or means to do"),
    ("committed_to", "intent", "many", "thing", False, "something the subject has promised to do"),
    ("responsible_for", "intent", "many", "thing", False, "a task, area or outcome the subject answers for"),
    ("blocked_by", "intent", "many", "thing", False, "something holding up the subject's progress"),
    ("knows", "social", "many", "person", False, "a person the subject is acquainted with"),
    ("works_with", "social", "many", "person", False, "a person the subject works alongside"),
    ("manages", "social", "many", "person", False, "a person or team the subject manages"),
    ("related_to", "social", "many", "person", False, "a family member of the subject"),
    ("owns", "possession", "many", "thing", False, "something the subject owns"),
    ("has_access_to", "possession", "many", "thing", False, "a system, place or resource the subject may use"),
    ("part_of", "structure", "many", "thing", False, "a whole the subject is a component of"),
    ("instance_of", "structure", "one", "thing", False, "the kind or category the subject is an example of"),
    ("located_in", "structure", "one", "place", False, "where the subject (a thing or organisation) is situated"),
    ("depends_on", "structure", "many", "thing", False, "something the subject needs in order to work"),
    ("same_as", "structure", "many", "thing", False,
     "another name for the subject. Recorded, never used to merge entities"),
    ("created", "authorship", "many", "thing", True, "something the subject made, wrote or founded"),
    ("contributed_to", "authorship", "many", "thing", True, "something the subject helped to make"),
    ("participated_in", "authorship", "many", "thing", True, "an event or activity the subject took part in"),
    ("occurred_on", "temporal", "one", "time", True, "when the subject (an event) happened"),
    ("scheduled_for", "temporal", "one", "time", False, "when the subject (an event or task) is planned"),
    ("due_on", "temporal", "one", "time", False, "when the subject (a task or deliverable) is due"),
    ("has_status", "state", "one", "value", False, "the subject's current state or condition"),
    ("requires", "constraint", "many", "thing", False, "a condition the subject needs or demands"),
    ("prohibits", "constraint", "many", "thing", False, "something the subject forbids or rules out"),
)

UNRESOLVABLE_TERMS = {
    "pronoun": ("i", "me", "my", "mine", "you", "your", "yours", "he", "him", "his", "she", "her", "hers", "it",
                "its", "we", "us", "our", "ours", "they", "them", "their", "theirs"),
    "demonstrative": ("this", "that", "these", "those"),
    "deictic": ("here", "there"),
    "indefinite": ("someone", "somebody", "something", "anyone", "anybody", "anything", "everyone", "everybody",
                   "everything", "nobody", "nothing"),
    "interrogative": ("who", "what", "which"),
}

SPEAKER_TERMS = ("i", "me", "myself", "the user", "user", "أنا", "انا", "نفسي")

# kind, table, id column, survives_sharing, description
PROJECTION_KINDS = (
    ("fact", "fact", "fact_id", True, "a formed or curated fact"),
    ("entity", "entity", "entity_id", True, "a resolved entity"),
    ("rejected_claim", "rejected_claim", "rejected_claim_id", True, "a refused proposal and its words"),
    ("fact_history", "fact_history", "history_id", False, "an archived fact interval"),
    ("agent_artifact", "agent_artifact", "artifact_id", False, "an agent's stored object"),
    ("segment", "segment", "segment_id", False, "a compaction summary"),
    ("feedback", "memory_feedback", "feedback_id", False, "feedback on a record"),
)
