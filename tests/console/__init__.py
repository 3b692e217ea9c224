"""Browser tests of the operator console (console.md §6)."""
