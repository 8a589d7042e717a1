"""Recipes: what a run is asked to do, declared below every stage and the runner so all of them read it from one
place without importing each other: the preset table, the training configs with their checks, and the budget
(a count or a ratio of a corpus). Torch-free: the app and job submission validate with it."""
