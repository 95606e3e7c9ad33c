"""Presentation: the Markdown comment and report, HTML, charts, JUnit, escaping.

Pure like core/: data in, text out.
"""
