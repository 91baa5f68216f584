"""Errors raised by traffic_models.

Exception tree::

    ValueError
     └── TrafficModelError   a model file, spec string, trace or argument is invalid;
                             the message names the file (or argument) and the field.
"""

from __future__ import annotations


class TrafficModelError(ValueError):
    """A traffic model could not be loaded or used; the message is a whole sentence."""
