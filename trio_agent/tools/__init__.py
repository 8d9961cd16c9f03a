"""Tools: the tool protocol (``base``), process groups (``procgroup``), subprocess tools."""
