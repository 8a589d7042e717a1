"""Corpus similarity (Dai et al. 2019, 2020): the measures, the cached source x target matrix, correlation with F1."""
