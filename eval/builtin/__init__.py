"""A small memory-style collection written for kenning, shipped in the package."""
