"""Tools registered by this module: (being written)."""
