"""Agents for ``corecraft eval``: reference replay, a seeded random baseline, an OpenAI tool-calling loop.

An agent is ``act(messages, tools, task) -> action``; the eval loop feeds it the env's messages.
"""
