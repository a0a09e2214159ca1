"""Scale-out: one input split at keyframes into chunks, scanned as Dask tasks and stitched, with a
manifest for resuming."""
