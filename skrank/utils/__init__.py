"""Internal utilities of skrank (not public API)."""
