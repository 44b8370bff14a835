"""Fuzzing the grouping rule: hypothesis-generated models checked three ways (to come)."""
