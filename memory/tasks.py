"""Celery tasks for passages: thin wrappers over the lexical follower (memory/lexical_index.py) and the embedding
follower (memory/generations.py), which runs after it: a message gets its vector only once it has its source."""
from celery import shared_task

from . import generations, lexeme_counts, lexical_index
from .embedding_kick import kick_follow


@shared_task(name="memory.tasks.follow_project", acks_late=True, reject_on_worker_lost=True,
             soft_time_limit=600, time_limit=660)
def follow_project(project):
    indexed = lexical_index.follow(project)
    stored = generations.follow(project)
    if indexed or stored:
        kick_follow(project)  # more may have arrived while this ran; an empty follow ends the chain
    return {"indexed": indexed or 0, "stored": stored or 0}


@shared_task(name="memory.tasks.embedding_sweep")
def embedding_sweep():
    projects = sorted(set(lexical_index.projects_behind()) | set(generations.projects_to_follow()))
    for project in projects:
        kick_follow(project)
    return projects


@shared_task(name="memory.tasks.fold_lexeme_counts")
def fold_lexeme_counts():
    return lexeme_counts.fold_projects()
