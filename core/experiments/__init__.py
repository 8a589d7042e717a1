"""Experiments stage: strategy x seed x budget experiments, their sweep figures, source comparisons, the CrossNER study."""
