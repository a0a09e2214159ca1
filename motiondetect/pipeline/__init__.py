"""The run: configuration, the motion detector over the filters (one frame or a batch of them),
the region of interest, and the runner that drives a source into the outputs."""
