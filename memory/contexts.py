"""Context assembly (recall.md §9): one subject's formed history under a character budget, the newest
turns verbatim and older stretches replaced by the highest-level segment covering them. No model call."""
from bisect import bisect_right
from dataclasses import dataclass

from django.conf import settings

from core.encoding import format_ts

from .selectors import freshness, read_snapshot

VERBATIM_TURNS = 8


@dataclass
class _Turn:
    observation_id: str
    log_offset: int
    occurred_at: object
    cost: int


@dataclass
class _Segment:
    segment_id: str
    level: int
    from_offset: int
    to_offset: int
    covered: int
    cost: int


def _covering(levels, offset):
    """The highest-level segment whose range holds `offset`, or None.

    `levels` maps level → (sorted from_offsets, segments in that order).
    """
    for level in sorted(levels, reverse=True):
        starts, segments = levels[level]
        i = bisect_right(starts, offset) - 1
        if i >= 0 and segments[i].to_offset >= offset:
            return segments[i]
    return None


def _items(turns, segments):
    """Oldest-first list of turns and segments standing for the subject's history."""
    newest = turns[-VERBATIM_TURNS:]
    older = turns[:-VERBATIM_TURNS] if len(turns) > VERBATIM_TURNS else []
    # A segment reaching into the verbatim tail (possible after an erasure) would repeat those turns.
    limit = newest[0].log_offset if newest else None
    levels = {}
    for seg in segments:
        if limit is not None and seg.to_offset >= limit:
            continue
        starts, members = levels.setdefault(seg.level, ([], []))
        starts.append(seg.from_offset)
        members.append(seg)
    items, emitted = [], set()
    for turn in older:
        seg = _covering(levels, turn.log_offset)
        if seg is None:
            items.append(turn)
        elif seg.segment_id not in emitted:
            emitted.add(seg.segment_id)
            items.append(seg)
    return items + newest


def assemble_context(*, project, data_subject_id, max_characters=None):
    """The context response body for one subject; an unknown subject gets an empty context."""
    budget = settings.MEMOIR_BUNDLE_CHARACTERS if max_characters is None else max_characters
    with read_snapshot() as cursor:
        watermark = freshness(project=project).as_dict()
        cursor.execute(
            "SELECT o.observation_id, o.log_offset, o.occurred_at,"
            " coalesce(sum(char_length(m.role) + char_length(m.content)), 0)"
            " FROM observation o LEFT JOIN turn_message m ON m.observation_id = o.observation_id"
            " WHERE o.scope = %s AND o.data_subject_id = %s AND o.kind = 'turn' AND o.formed_at IS NOT NULL"
            " GROUP BY o.observation_id ORDER BY o.log_offset",
            [project, data_subject_id],
        )
        turns = [_Turn(str(r[0]), r[1], r[2], int(r[3])) for r in cursor.fetchall()]
        segments = []
        if len(turns) > VERBATIM_TURNS:
            cursor.execute(
                "SELECT segment_id, level, from_offset, to_offset, covered, char_length(summary) FROM segment"
                " WHERE scope = %s AND data_subject_id = %s ORDER BY level, from_offset, segment_id",
                [project, data_subject_id],
            )
            segments = [_Segment(str(r[0]), *r[1:]) for r in cursor.fetchall()]
        kept, spent, truncated = [], 0, False
        # Newest first: the cut always falls on the oldest end.
        for item in reversed(_items(turns, segments)):
            if spent + item.cost > budget:
                truncated = True
                break
            kept.append(item)
            spent += item.cost
        kept.reverse()
        summaries = _summaries(cursor, [i.segment_id for i in kept if isinstance(i, _Segment)])
        messages = _messages(cursor, [i.observation_id for i in kept if isinstance(i, _Turn)])
    out_segments = [
        {"segment_id": s.segment_id, "level": s.level, "from_offset": s.from_offset, "to_offset": s.to_offset,
         "covered": s.covered, "summary": summaries[s.segment_id]}
        for s in kept if isinstance(s, _Segment)
    ]
    out_turns = [
        {"log_offset": t.log_offset, "occurred_at": format_ts(t.occurred_at), "messages": messages.get(t.observation_id, [])}
        for t in kept if isinstance(t, _Turn)
    ]
    return {"segments": out_segments, "turns": out_turns, "watermark": watermark, "characters": spent,
            "truncated": truncated}


def _summaries(cursor, segment_ids):
    if not segment_ids:
        return {}
    cursor.execute("SELECT segment_id, summary FROM segment WHERE segment_id = ANY(%s::uuid[])", [segment_ids])
    return {str(sid): summary for sid, summary in cursor.fetchall()}


def _messages(cursor, observation_ids):
    if not observation_ids:
        return {}
    cursor.execute(
        "SELECT observation_id, role, content FROM turn_message WHERE observation_id = ANY(%s::uuid[])"
        " ORDER BY observation_id, ordinal",
        [observation_ids],
    )
    out = {}
    for observation_id, role, content in cursor.fetchall():
        out.setdefault(str(observation_id), []).append({"role": role, "content": content})
    return out
