"""Presentation: the PR comment, check run, Markdown, HTML and JUnit reports, from data.

Pure like core/: data in, text out.  The shared words are in ``phrases``.
"""
