"""Celery tasks for passages: thin wrappers over the embedding follower (memory/generations.py)."""
from celery import shared_task

from . import generations, lexeme_counts
from .embedding_kick import kick_follow


@shared_task(name="memory.tasks.follow_project", acks_late=True, reject_on_worker_lost=True,
             soft_time_limit=600, time_limit=660)
def follow_project(project):
    stored = generations.follow(project)
    if stored:
        kick_follow(project)  # more may have arrived while this ran; an empty follow ends the chain
    return {"stored": stored or 0}


@shared_task(name="memory.tasks.embedding_sweep")
def embedding_sweep():
    projects = generations.projects_to_follow()
    for project in projects:
        kick_follow(project)
    return projects


@shared_task(name="memory.tasks.fold_lexeme_counts")
def fold_lexeme_counts():
    return lexeme_counts.fold_projects()
