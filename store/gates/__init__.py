"""Write gates: each module checks one way a write can be wrong and says why it refuses."""
