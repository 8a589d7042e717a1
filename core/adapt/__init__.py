"""Adaptation stage: self-training and MLM augmentation (the Inspect page's review and span HTML are core/review)."""
