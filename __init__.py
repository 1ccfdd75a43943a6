"""kenning."""
