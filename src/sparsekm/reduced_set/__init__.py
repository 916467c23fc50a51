"""Reduced-set methods: approximate an expansion by one with few terms."""

__all__: list[str] = []
