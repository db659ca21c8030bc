"""Packaged chip descriptions: one YAML file per chip (see sim/config.py for the schema)."""
