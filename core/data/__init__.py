"""Data stage: corpus readers/writers, tag schemes, statistics, demo data, streamed reads, browsing, the workspace."""
