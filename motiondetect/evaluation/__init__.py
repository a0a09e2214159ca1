"""Scoring against ground truth (CDnet-style folders) and leave-one-clip-out tuning."""
