"""Statistics layer: each statistic chooses a protocol per trust model."""
