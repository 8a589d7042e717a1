"""Adaptation and inspection stage: self-training, augmentation, weak-run explanations, the Inspect page, review, span HTML."""
