"""What a person runs: the ``motiondetect`` command, its ``evaluate`` subcommand and the live
preview window."""
