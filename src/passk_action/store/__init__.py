"""Runs and results on disk: run artifacts and their journal, result files, merged shards."""
