"""Safety: hostile-content scanning (secrets, instruction-like text) and its pattern table."""
