"""Internal helpers shared across sparsekm (validation, random state, progress)."""
