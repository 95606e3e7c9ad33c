"""Fakes shipped with passk, so users' tests and demos can use them too.

:mod:`passk_action.testing.scripted_agent` is an agent process whose every
answer, crash, hang and malformed output is set in advance by a JSON script.
"""
