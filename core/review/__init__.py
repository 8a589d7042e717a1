"""Reviewing predicted entities: cached predictions to review, the review store, span highlighting."""
