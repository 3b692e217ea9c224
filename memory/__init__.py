"""Memory: the source log, the vocabulary and what formation derives from it."""
