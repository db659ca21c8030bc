"""The chip description: the key table and schema walker, the bounded YAML reader, loading
and validation into the typed chip model, and what-if overrides of any number in it."""
