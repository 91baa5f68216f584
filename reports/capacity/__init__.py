"""Capacity search results: one step judged at a planned look (`stepstats`), capacity.json as one
typed model (`document_model`) and capacity.html with its knee curve (`page`).
"""
